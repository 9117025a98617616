// The report as JSON: a list of rows (--format json), or an object with each
// run's metadata and the rows (--format json-full). Keys: docs/analysis.md.
#include <cmath>
#include <nlohmann/json.hpp>

#include "report/baseline.hpp"
#include "report/expectations.hpp"
#include "report/json_params.hpp"
#include "report/report.hpp"

namespace gpuscale {

namespace {

// What every row has: the case, its job and its parameters.
nlohmann::json json_identity(const ReportRow& r) {
  nlohmann::json o;
  o["file"] = r.file;
  o["case"] = r.case_index + 1;
  o["name"] = r.name;
  o["workload"] = r.workload;
  o["mode"] = mode_name(r.mode);
  o["backend"] = backend_name(r.backend);
  o["ranks"] = r.ranks;
  o["nodes"] = r.nodes;
  o["reps"] = r.reps;
  o["params"] = params_json<nlohmann::json>(r.params);
  o["status"] = status_name(r.status);
  if (!r.status_reason.empty()) o["status_reason"] = r.status_reason;
  if (!r.note.empty()) o["note"] = r.note;
  if (!r.flags.empty()) o["flags"] = r.flags;
  if (!r.run_warnings.empty()) o["run_warnings"] = r.run_warnings;
  return o;
}

// What else the host did: the shares where they were measured, and the two flags.
nlohmann::json host_json(const HostNoise& h) {
  nlohmann::json o{{"busy", !h.busy.empty()}, {"descheduled", !h.descheduled.empty()}};
  if (!h.oversubscribed.empty()) o["oversubscribed"] = h.oversubscribed;  // "3 ranks on 2 cores of node 0"
  if (std::isfinite(h.others_share)) {
    o["others_share"] = h.others_share;
    o["others_node"] = h.others_node;
  }
  if (std::isfinite(h.wait_share)) {
    o["wait_share"] = h.wait_share;
    o["wait_rank"] = h.wait_rank;
  }
  if (std::isfinite(h.load)) o["load"] = h.load;
  return o;
}

// The numbers: absent rather than null where a row has none.
void json_numbers(const ReportRow& r, nlohmann::json& o) {
  if (r.status != CaseStatus::skipped) {  // a skipped case has no samples
    o["median_s"] = r.median_s;
    o["min_s"] = r.min_s;
    o["p95_s"] = r.p95_s;
    o["enqueue_median_s"] = r.enqueue_median_s;
    o["slowest_rank"] = r.slowest_rank;
    o["slowest_ratio"] = r.slowest_ratio;
    o["max_verify_error"] = r.max_verify_error;
    o["host"] = host_json(r.host);
  }
  const std::pair<const char*, const std::optional<double>*> optional_numbers[] = {
      {"gflops", &r.gflops},         {"total_gflops", &r.total_gflops}, {"gbps", &r.gbps},
      {"total_gbps", &r.total_gbps}, {"speedup", &r.speedup},           {"efficiency", &r.efficiency},
      {"op_time_s", &r.op_time_s},   {"algbw_gbps", &r.algbw_gbps},     {"busbw_gbps", &r.busbw_gbps},
      {"op_time_min_s", &r.op_time_min_s}, {"op_time_max_s", &r.op_time_max_s}};
  for (const auto& [key, value] : optional_numbers) {
    if (*value) o[key] = **value;
  }
  for (const auto& f : r.figures) {
    if (f.kind == FigureKind::case_number) {
      o[f.key] = static_cast<std::size_t>(f.value) + 1;
    } else {
      o[f.key] = f.value;
    }
  }
  // 95% intervals (the median's at kMedianConfidence): absent with too few samples.
  const std::pair<const char*, const std::optional<Interval>*> intervals[] = {
      {"median_lo_s", &r.median_ci}, {"speedup_lo", &r.speedup_ci}, {"efficiency_lo", &r.efficiency_ci},
      {"op_time_lo_s", &r.op_time_ci}};
  for (const auto& [lo, ci] : intervals) {
    if (!*ci) continue;
    std::string hi = lo;
    hi.replace(hi.find("_lo"), 3, "_hi");
    o[lo] = (*ci)->lo;
    o[hi] = (*ci)->hi;
  }
  if (r.speedup_ci) o["speedup_no_difference"] = speedup_uncertain(r);
  if (r.scope) {
    o["scope"] = scope_name(*r.scope);
    o["comm"] = comm_name(r.comm);
    o["groups"] = r.groups;
    o["group_size"] = r.group_size;
    o["wrong_elements"] = r.wrong_elements;
  }
}

// The comparison with the baseline; with what its verdict needed where the row has a twin there and `s` is known.
nlohmann::json baseline_json(const ReportRow& r, const BaselineSummary* s) {
  const BaselineComparison& b = *r.baseline;
  nlohmann::json bj{{"file", b.file}, {"verdict", b.verdict}};
  if (std::isfinite(b.median_s)) {
    bj["case"] = b.case_index + 1;
    bj["median_s"] = b.median_s;
    if (b.op_time_s) bj["op_time_s"] = *b.op_time_s;
    bj["ratio"] = b.ratio;
    bj["compared"] = b.op_time_s ? "op_time_s" : "median_s";
  }
  if (!b.ran_there.empty()) bj["ran_there"] = b.ran_there;
  if (b.ratio_ci) {
    bj["ratio_lo"] = b.ratio_ci->lo;
    bj["ratio_hi"] = b.ratio_ci->hi;
    bj["small_change"] = small_change(b);
  }
  if (s && std::isfinite(b.median_s)) {
    bj["min_effect"] = s->min_effect;
    bj["effect_needed"] = b.effect;
    bj["baseline_runs"] = b.runs;
    if (std::isfinite(b.runs_scatter)) bj["runs_scatter"] = b.runs_scatter;
    if (std::isfinite(s->scatter)) {
      bj["run_scatter"] = s->scatter;
      bj["scatter_cases"] = s->scatter_cases;
    }
    const auto why = s->uncertain.find(r.case_index);
    if (why != s->uncertain.end()) bj["uncertain_why"] = why->second;
  }
  return bj;
}

// The limits, the baseline, the stragglers, the phases and the breakdown, where the row has them.
void json_judgements(const ReportRow& r, const BaselineSummary* s, nlohmann::json& o) {
  if (!r.expect.empty()) {
    nlohmann::json ex = nlohmann::json::array();
    for (const auto& c : check_row(r)) {
      nlohmann::json e{{"limit", c.limit}, {"expected", c.expected}, {"holds", c.holds}};
      if (!c.not_applicable.empty()) {  // neither held nor failed
        e["holds"] = nullptr;
        e["not_applicable"] = c.not_applicable;
      }
      if (c.measured) e["measured"] = *c.measured;
      if (!c.why.empty()) e["why"] = c.why;
      if (!c.host.empty()) e["host"] = c.host;
      ex.push_back(std::move(e));
    }
    o["expect"] = ex;
  }
  if (r.baseline) o["baseline"] = baseline_json(r, s);
  if (!r.stragglers.ranks.empty() || !r.stragglers.nodes.empty()) {
    nlohmann::json st = {{"ranks", nlohmann::json::array()}, {"nodes", nlohmann::json::array()}};
    for (const auto& x : r.stragglers.ranks) {
      st["ranks"].push_back({{"rank", x.rank}, {"host", x.host}, {"node", x.node}, {"local_rank", x.local_rank},
                             {"device_name", x.device_name}, {"device_pci_bus_id", x.device_pci_bus_id},
                             {"ratio", x.ratio}});
    }
    for (const auto& x : r.stragglers.nodes) {
      st["nodes"].push_back({{"host", x.host}, {"node", x.node}, {"ranks", x.ranks}, {"ratio", x.ratio}});
    }
    o["stragglers"] = st;
  }
  if (!r.phase_s.empty()) {
    nlohmann::json ph = nlohmann::json::object();
    for (const auto& [name, t] : r.phase_s) ph[name] = t;
    o["phase_s"] = ph;
  }
  if (r.breakdown) o["breakdown"] = nlohmann::json::parse(breakdown_json(*r.breakdown));
}

}  // namespace

namespace {

nlohmann::json rows_json(const std::vector<ReportRow>& rows, const std::vector<BaselineSummary>& summaries) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json o = json_identity(r);
    json_numbers(r, o);
    json_judgements(r, summary_of(summaries, r.file), o);
    for (const auto& [key, text] : r.json) o[key] = nlohmann::json::parse(text);
    arr.push_back(std::move(o));
  }
  return arr;
}

// Bytes that are not UTF-8 (a file of another writer) as U+FFFD, rather than an exception with no row.
std::string dump(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

// Where each rank ran: what a reader needs to tell ranks and nodes apart.
nlohmann::json ranks_json(const RunRecord& run) {
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t i = 0; i < run.ranks.size(); ++i) {
    const RankRecord& r = run.ranks[i];
    out.push_back({{"rank", i}, {"host", r.hostname}, {"node", r.node_index}, {"local_rank", r.local_rank},
                   {"device_kind", r.device_kind}, {"device_name", r.device_name},
                   {"device_pci_bus_id", r.device_pci_bus_id}, {"cores_available", r.cores_available},
                   {"node_cores", r.node_cores}});
  }
  return out;
}

// What the table's header says of a run: its job, software, completeness and warnings.
nlohmann::json run_json(const std::string& path, const RunRecord& run, std::size_t cases) {
  nlohmann::json o{{"file", path},
                   {"software", run.software},
                   {"software_version", run.software_version},
                   {"schema_version", run.schema_version},
                   {"software_dependencies", run.software_dependencies},
                   {"mpi_library", run.mpi_library},
                   {"date", run.date},
                   {"command_line", run.command_line},
                   {"config_file", run.config_file},
                   {"backend", backend_name(run.backend)},
                   {"backend_reason", run.backend_reason},
                   {"comm", comm_name(run.comm)},
                   {"comm_reason", run.comm_reason},
                   {"ranks", run.ranks.size()},
                   {"nodes", run.nodes},
                   {"complete", run.complete},
                   {"status", run.status},
                   {"running", run.being_written},
                   {"cases", cases},
                   {"warnings", run.warnings},
                   {"rank_table", ranks_json(run)}};
  if (run.cases_planned > 0) o["cases_planned"] = run.cases_planned;
  if (!run.slurm_job_id.empty()) o["slurm_job_id"] = run.slurm_job_id;
  if (!run.last_update.empty()) o["last_update"] = run.last_update;
  return o;
}

}  // namespace

std::string render_json(const std::vector<ReportRow>& rows) { return render_json(rows, {}); }

std::string render_json(const std::vector<ReportRow>& rows, const std::vector<BaselineSummary>& summaries) {
  return dump(rows_json(rows, summaries));
}

std::string render_json_full(const std::vector<RunOfRows>& runs) { return render_json_full(runs, {}); }

std::string render_json_full(const std::vector<RunOfRows>& runs, const std::vector<BaselineSummary>& summaries) {
  nlohmann::json out{{"runs", nlohmann::json::array()}, {"cases", nlohmann::json::array()}};
  for (const auto& r : runs) {
    out["runs"].push_back(run_json(r.path, *r.run, r.rows->size()));
    for (auto& row : rows_json(*r.rows, summaries)) out["cases"].push_back(std::move(row));
  }
  return dump(out);
}


}  // namespace gpuscale
