#include "report/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "core/error.hpp"
#include "core/metrics.hpp"
#include "core/stats.hpp"
#include "core/text.hpp"
#include "report/analysis.hpp"
#include "report/expectations.hpp"

namespace gpuscale {

namespace {

std::string label_of(const Params& p) {
  std::string s;
  for (const auto& [k, v] : p.items()) {
    if (!s.empty()) s += ' ';
    s += k + '=' + to_string(v);
  }
  return s;
}

std::string fmt(const char* f, double v) { return format_number(f, v); }

}  // namespace

std::vector<bool> taking_part(const CaseRecord& c) {
  std::vector<bool> in(static_cast<std::size_t>(c.ranks), true);
  for (std::size_t r = 0; r < c.group.size() && r < in.size(); ++r) in[r] = c.group[r] >= 0;
  return in;
}

std::vector<double> rows_of(const std::vector<double>& x, int reps, const std::vector<bool>& in) {
  std::vector<double> out;
  for (std::size_t r = 0; r < in.size(); ++r) {
    if (in[r]) out.insert(out.end(), x.begin() + r * reps, x.begin() + (r + 1) * reps);
  }
  return out;
}

std::vector<std::pair<std::string, std::vector<double>>> phase_sums(const CaseRecord& c) {
  const CaseTable* t = find_table(c.tables, kPhasesTable);
  if (!t || c.reps == 0) return {};
  const auto col = columns_of(*t, {{"rank", ColumnType::integer}, {"sample", ColumnType::integer},
                                   {"phase", ColumnType::integer}, {"start", ColumnType::real},
                                   {"end", ColumnType::real}});
  if (col.empty()) return {};
  const std::size_t samples = static_cast<std::size_t>(c.ranks) * c.reps;
  std::vector<std::pair<std::string, std::vector<double>>> sums;
  for (const auto& n : col[2]->levels) sums.emplace_back(n, std::vector<double>(samples, 0.0));
  for (std::size_t i = 0; i < t->rows(); ++i) {
    const auto rank = static_cast<std::size_t>(col[0]->ints[i]), sample = static_cast<std::size_t>(col[1]->ints[i]);
    const std::size_t at = rank * c.reps + sample;
    if (at < samples) sums[static_cast<std::size_t>(col[2]->ints[i])].second[at] += col[4]->reals[i] - col[3]->reals[i];
  }
  return sums;
}

namespace {


// "" unless some rank's first timed sample is much slower than that rank's median.
std::string cold_start_flag(const CaseRecord& c, const std::vector<bool>& in) {
  if (c.reps < 3) return "";
  double worst = 0.0;
  int worst_rank = 0;
  for (int r = 0; r < c.ranks; ++r) {
    if (!in[r]) continue;
    const auto first = c.device_time_s.begin() + static_cast<std::ptrdiff_t>(r) * c.reps;
    const double ratio = *first / median(std::vector<double>(first, first + c.reps));
    if (ratio > worst) {
      worst = ratio;
      worst_rank = r;
    }
  }
  if (!(worst > kColdStartRatio)) return "";
  return "cold: the first timed sample took " + fmt("%.2fx", worst) + " the median on rank " +
         std::to_string(worst_rank) + " (more warm-up: warmup_s)";
}

// Times of ranks on different nodes are compared through their clock offsets
// (makespans, serial turns): two ranks' times may be off by the sum of their
// offsets' uncertainties. Flagged when that is more than this share of the
// case's median sample.
constexpr double kClockUncertaintyShare = 0.05;

// "" unless the clock offsets of the ranks that took part are uncertain by a
// noticeable share of the case's median sample time.
std::string clock_flag(const RunRecord& run, const CaseRecord& c, const std::vector<bool>& in, double median_s) {
  std::vector<double> u;
  for (int r = 0; r < c.ranks && static_cast<std::size_t>(r) < run.ranks.size(); ++r) {
    if (in[r]) u.push_back(applied_clock_uncertainty(run.ranks[r]));
  }
  if (u.size() < 2 || !(median_s > 0)) return "";
  std::sort(u.begin(), u.end(), std::greater<>());
  const double pair = u[0] + u[1];  // the most two of them can be off against each other
  if (!(pair > kClockUncertaintyShare * median_s)) return "";
  return "clock: ranks' offsets are uncertain by up to " + format_seconds(pair) + ", " +
         fmt("%.0f%%", 100.0 * pair / median_s) + " of the median sample (cross-node times are that unsure)";
}

// NVML's clock event reasons that lower clocks below what the load asks for
// (nvml.h, nvmlClocksEventReason*); idle, application clocks, sync boost and
// display clocks are not counted.
constexpr std::pair<std::int64_t, const char*> kClockLimits[] = {
    {0x4, "sw_power_cap"}, {0x8, "hw_slowdown"}, {0x20, "sw_thermal"}, {0x40, "hw_thermal"}, {0x80, "hw_power_brake"}};

// A case whose median SM clock during its timed samples was below this share
// of the GPU's maximum is flagged.
constexpr double kLowClockShare = 0.9;

// Flags from the GPU readings taken during each rank's timed samples.
void telemetry_flags(const RunRecord& run, const CaseRecord& c, std::vector<std::string>& flags) {
  const CaseTable* table = find_table(c.tables, kTelemetryTable);
  if (!table || c.reps == 0) return;
  const auto col = columns_of(*table, {{"rank", ColumnType::integer}, {"time", ColumnType::real},
                                       {"sm_clock", ColumnType::real}, {"clock_event_reasons", ColumnType::integer}});
  if (col.empty()) return;
  const auto &rank = col[0]->ints, &reason = col[3]->ints;
  const auto &time = col[1]->reals, &sm_clock = col[2]->reals;
  std::string limited;  // "sw_power_cap on rank 0, ..." once per reason
  std::string low;
  for (int r = 0; r < c.ranks; ++r) {
    const auto first = c.wall_start_s.begin() + static_cast<std::ptrdiff_t>(r) * c.reps;
    const double from = *std::min_element(first, first + c.reps);
    const auto last = c.wall_end_s.begin() + static_cast<std::ptrdiff_t>(r) * c.reps;
    const double to = *std::max_element(last, last + c.reps);
    std::int64_t reasons = 0;
    std::vector<double> sm;
    for (std::size_t i = 0; i < table->rows(); ++i) {
      if (rank[i] != r || time[i] < from || time[i] > to) continue;
      if (reason[i] > 0) reasons |= reason[i];
      if (std::isfinite(sm_clock[i])) sm.push_back(sm_clock[i]);
    }
    for (const auto& [bit, name] : kClockLimits) {
      if ((reasons & bit) && limited.find(name) == std::string::npos) {
        limited += std::string(limited.empty() ? "" : ", ") + name + " (rank " + std::to_string(r) + ")";
      }
    }
    const double max_clock = static_cast<std::size_t>(r) < run.ranks.size() ? run.ranks[r].max_sm_clock_mhz : NAN;
    if (low.empty() && !sm.empty() && std::isfinite(max_clock) && max_clock > 0) {
      const double m = median(sm);
      if (m < kLowClockShare * max_clock) {
        low = "clocks: the SM clock was " + fmt("%.0f MHz", m) + " (median), " + fmt("%.0f%%", 100 * m / max_clock) +
              " of its " + fmt("%.0f MHz", max_clock) + " maximum, on rank " + std::to_string(r);
      }
    }
  }
  if (!limited.empty()) flags.push_back("throttled: " + limited);
  if (!low.empty()) flags.push_back(low);
}

// Each phase's median time in a sample (its intervals summed), over the ranks that took part.
void phase_numbers(const CaseRecord& c, const std::vector<bool>& in, ReportRow& r) {
  for (const auto& [name, sums] : phase_sums(c)) r.phase_s.emplace_back(name, median(rows_of(sums, c.reps, in)));
}

}  // namespace

std::string format_seconds(double s) {
  if (!std::isfinite(s)) return "-";
  const double a = std::fabs(s);
  if (a >= 1.0) return fmt("%.3g s", s);
  if (a >= 1e-3) return fmt("%.3g ms", s * 1e3);
  return fmt("%.3g us", s * 1e6);
}

namespace {

// What identifies the case and its job, from the record alone.
ReportRow row_of_case(const CaseRecord& c) {
  ReportRow r;
  r.case_index = c.index;
  r.name = c.experiment;
  r.workload = c.workload;
  r.mode = c.mode;
  r.backend = c.backend;
  r.status = c.status;
  r.status_reason = c.status_reason;
  r.ranks = c.ranks;
  r.nodes = c.nodes;
  r.reps = c.reps;
  r.params = c.params.without({"warmup", "warmup_s", "reps"});  // what identifies a case for pairing and display
  r.params_label = label_of(r.params);
  r.scope = c.scope;
  r.comm = c.comm;
  r.groups = c.groups;
  for (auto n : c.group_size) r.group_size = std::max(r.group_size, static_cast<int>(n));
  r.note = c.note;
  r.expect = c.expect;
  return r;
}

// The rates: a transfer's as nccl-tests counts them, else GFLOP/s or GB/s per rank and of all ranks.
void rates(const CaseRecord& c, const std::vector<bool>& in, ReportRow& r) {
  const auto part = static_cast<int>(std::count(in.begin(), in.end(), true));
  // The device times of the ranks that took part (without a copy when all did: files can be large).
  const bool all_in = part == c.ranks;
  const std::vector<double> some = all_in ? std::vector<double>() : rows_of(c.device_time_s, c.reps, in);
  const std::vector<double>& device = all_in ? c.device_time_s : some;
  // The node-pair sweep is not one operation: GB/s over the sweep instead.
  const bool sweep = c.scope == "node-pairs";
  if (!c.scope.empty() && !sweep && !c.op_bytes.empty() && mean(c.op_bytes) > 0) {
    const int iters = c.params.has("iters") ? static_cast<int>(c.params.get_int("iters")) : 1;
    r.op_time_s = median(mean_op_times(c.device_time_s, c.ranks, c.reps, iters));
    r.algbw_gbps = mean(c.op_bytes) / *r.op_time_s / 1e9;
    r.busbw_gbps = *r.algbw_gbps * mean(c.bus_factor);
  } else if (c.flops_per_sample > 0) {
    r.gflops = c.flops_per_sample / median(device) / 1e9;
    r.total_gflops = c.flops_per_sample * part / r.median_s / 1e9;
  } else if (c.bytes_per_sample > 0) {
    r.gbps = c.bytes_per_sample / median(device) / 1e9;
    r.total_gbps = c.bytes_per_sample * part / r.median_s / 1e9;
  }
}

// The slowest rank, the stragglers, and what makes the numbers doubtful.
void ranks_and_flags(const RunRecord& run, const CaseRecord& c, const std::vector<bool>& in, double threshold,
                     ReportRow& r) {
  const auto meds = rank_medians(durations(c.wall_start_s, c.wall_end_s), c.ranks, c.reps);
  std::vector<double> part_meds;
  for (int q = 0; q < c.ranks; ++q) {
    if (!in[q]) continue;
    part_meds.push_back(meds[q]);
    if (part_meds.size() == 1 || meds[q] > meds[r.slowest_rank]) r.slowest_rank = q;
  }
  r.slowest_ratio = meds[r.slowest_rank] / median(part_meds);
  r.stragglers = find_stragglers(meds, in, run.ranks, threshold);
  for (auto& line : straggler_lines(r.stragglers)) r.flags.push_back(std::move(line));
  if (std::string f = cold_start_flag(c, in); !f.empty()) r.flags.push_back(std::move(f));
  if (std::string f = clock_flag(run, c, in, r.median_s); !f.empty()) r.flags.push_back(std::move(f));
  telemetry_flags(run, c, r.flags);
}

}  // namespace

ReportRow report_row(const RunRecord& run, const CaseRecord& c, double pair_threshold, double straggler_threshold) {
  ReportRow r = row_of_case(c);
  std::tie(r.node_ranks, r.node_cores) = most_crowded_node(run);
  std::vector<std::int64_t> turn = c.turn;
  if (turn.empty()) {  // none recorded (schema 1.0): each rank alone
    for (int rank = 0; rank < c.ranks; ++rank) turn.push_back(rank);
  }
  r.turns = turn.empty() ? 0 : static_cast<int>(*std::max_element(turn.begin(), turn.end()) + 1);
  if (c.status == "skipped") {  // nothing ran
    r.median_s = r.min_s = r.p95_s = r.enqueue_median_s = std::nan("");
    return r;
  }
  const auto samples = c.mode == "serial" ? serial_turn_totals(c.wall_start_s, c.wall_end_s, turn, c.ranks, c.reps)
                                          : makespans(c.wall_start_s, c.wall_end_s, c.ranks, c.reps);
  r.median_s = median(samples);
  r.median_ci = median_interval(samples);
  r.min_s = minimum(samples);
  r.p95_s = quantile(samples, 0.95);
  r.enqueue_median_s = median(c.enqueue_s);
  // Work of all ranks over the time it took (for serial, one after another).
  const auto in = taking_part(c);
  rates(c, in, r);
  for (auto w : c.wrong_elements) r.wrong_elements = std::max(r.wrong_elements, w);
  r.max_verify_error = c.verify_error.empty() ? 0.0 : maximum(c.verify_error);
  ranks_and_flags(run, c, in, straggler_threshold, r);
  phase_numbers(c, in, r);
  if (const RowAnalysis* a = analysis_of(c.workload)) {
    a->row(run, c, RowSettings{pair_threshold, straggler_threshold}, r);
  }
  return r;
}

void set_speedup(ReportRow& p, const ReportRow& base, double workers) {
  p.speedup = speedup(base.median_s, p.median_s);
  p.efficiency = efficiency(*p.speedup, workers);
  p.speedup_ci = ratio_interval(base.median_ci, p.median_ci);
  if (p.speedup_ci) {
    p.efficiency_ci = Interval{efficiency(p.speedup_ci->lo, workers), efficiency(p.speedup_ci->hi, workers)};
  }
}

bool no_difference(const ReportRow& r) { return r.speedup_ci && r.speedup_ci->contains(1.0); }

const Figure* ReportRow::figure(const std::string& key) const {
  for (const auto& f : figures) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

std::optional<double> ReportRow::figure_value(const std::string& key) const {
  const Figure* f = figure(key);
  return f ? std::optional<double>(f->value) : std::nullopt;
}

void relate_rows(std::vector<ReportRow>& rows) {
  // What each workload's rows say about each other (strong scaling, of vendor, ...), once per workload.
  std::vector<const RowAnalysis*> done;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const RowAnalysis* a = analysis_of(rows[i].workload);
    if (!a || std::find(done.begin(), done.end(), a) != done.end()) continue;
    done.push_back(a);
    a->relate(rows);
  }
  // Pair each parallel row with the serial row of the same experiment,
  // parameters, ranks and nodes.
  for (auto& p : rows) {
    if (p.mode != "parallel" || p.status == "skipped") continue;
    for (const auto& s : rows) {
      if (s.mode == "serial" && s.status != "skipped" && s.name == p.name && s.params == p.params &&
          s.ranks == p.ranks && s.nodes == p.nodes) {
        set_speedup(p, s, s.turns);
        break;
      }
    }
  }
}

std::vector<ReportRow> build_report(const RunRecord& run, double pair_threshold, double straggler_threshold) {
  std::vector<ReportRow> rows;
  for (const auto& c : run.cases) rows.push_back(report_row(run, c, pair_threshold, straggler_threshold));
  relate_rows(rows);
  return rows;
}

ReportFormat parse_report_format(const std::string& s) {
  if (s == "table") return ReportFormat::table;
  if (s == "csv") return ReportFormat::csv;
  if (s == "json") return ReportFormat::json;
  throw InputError("unknown report format '" + s + "'; valid formats: table, csv, json");
}

namespace {
nlohmann::json to_json(const Value& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return *i;
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* b = std::get_if<bool>(&v)) return *b;
  return std::get<std::string>(v);
}
}  // namespace

namespace {

// What every row has: the case, its job and its parameters.
nlohmann::json json_identity(const ReportRow& r) {
  nlohmann::json o;
  o["file"] = r.file;
  o["case"] = r.case_index + 1;
  o["name"] = r.name;
  o["workload"] = r.workload;
  o["mode"] = r.mode;
  o["backend"] = r.backend;
  o["ranks"] = r.ranks;
  o["nodes"] = r.nodes;
  o["reps"] = r.reps;
  nlohmann::json p = nlohmann::json::object();
  for (const auto& [k, v] : r.params.items()) p[k] = to_json(v);
  o["params"] = p;
  o["status"] = r.status;
  if (!r.status_reason.empty()) o["status_reason"] = r.status_reason;
  if (!r.note.empty()) o["note"] = r.note;
  if (!r.flags.empty()) o["flags"] = r.flags;
  return o;
}

// The numbers: absent rather than null where a row has none.
void json_numbers(const ReportRow& r, nlohmann::json& o) {
  if (r.status != "skipped") {  // a skipped case has no samples
    o["median_s"] = r.median_s;
    o["min_s"] = r.min_s;
    o["p95_s"] = r.p95_s;
    o["enqueue_median_s"] = r.enqueue_median_s;
    o["slowest_rank"] = r.slowest_rank;
    o["slowest_ratio"] = r.slowest_ratio;
    o["max_verify_error"] = r.max_verify_error;
  }
  const std::pair<const char*, const std::optional<double>*> optional_numbers[] = {
      {"gflops", &r.gflops},         {"total_gflops", &r.total_gflops}, {"gbps", &r.gbps},
      {"total_gbps", &r.total_gbps}, {"speedup", &r.speedup},           {"efficiency", &r.efficiency},
      {"op_time_s", &r.op_time_s},   {"algbw_gbps", &r.algbw_gbps},     {"busbw_gbps", &r.busbw_gbps}};
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
      {"median", &r.median_ci}, {"speedup", &r.speedup_ci}, {"efficiency", &r.efficiency_ci}};
  for (const auto& [key, ci] : intervals) {
    if (!*ci) continue;
    const std::string k = key;
    o[k == "median" ? "median_lo_s" : k + "_lo"] = (*ci)->lo;
    o[k == "median" ? "median_hi_s" : k + "_hi"] = (*ci)->hi;
  }
  if (r.speedup_ci) o["speedup_no_difference"] = no_difference(r);
  if (!r.scope.empty()) {
    o["scope"] = r.scope;
    o["comm"] = r.comm;
    o["groups"] = r.groups;
    o["group_size"] = r.group_size;
    o["wrong_elements"] = r.wrong_elements;
  }
}

// The limits, the baseline, the stragglers and the phases, where the row has them.
void json_judgements(const ReportRow& r, nlohmann::json& o) {
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
      ex.push_back(std::move(e));
    }
    o["expect"] = ex;
  }
  if (r.baseline) {
    const BaselineComparison& b = *r.baseline;
    nlohmann::json bj{{"file", b.file}, {"verdict", b.verdict}};
    if (std::isfinite(b.median_s)) {
      bj["case"] = b.case_index + 1;
      bj["median_s"] = b.median_s;
      bj["ratio"] = b.ratio;
    }
    if (b.ratio_ci) {
      bj["ratio_lo"] = b.ratio_ci->lo;
      bj["ratio_hi"] = b.ratio_ci->hi;
    }
    o["baseline"] = bj;
  }
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
}

}  // namespace

std::string render_json(const std::vector<ReportRow>& rows) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json o = json_identity(r);
    json_numbers(r, o);
    json_judgements(r, o);
    for (const auto& [key, text] : r.json) o[key] = nlohmann::json::parse(text);
    arr.push_back(std::move(o));
  }
  // Bytes that are not UTF-8 (a file of another writer) as U+FFFD, rather than an exception with no row.
  return arr.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

namespace {
// The CSV's columns are fixed; figures of other keys than these (a newer workload's) follow them, in the order
// they first appear.
std::vector<std::string> more_figures(const std::vector<ReportRow>& rows) {
  const std::vector<std::string> fixed{"exposed_transfer_s", "overlap_fraction", "of_vendor", "vendor_case"};
  std::vector<std::string> out;
  for (const auto& r : rows) {
    for (const auto& f : r.figures) {
      if (std::find(fixed.begin(), fixed.end(), f.key) == fixed.end() &&
          std::find(out.begin(), out.end(), f.key) == out.end()) {
        out.push_back(f.key);
      }
    }
  }
  return out;
}
}  // namespace

std::string render_csv(const std::vector<ReportRow>& rows) {
  std::ostringstream os;
  os.precision(9);
  os << "file,case,name,workload,mode,backend,ranks,nodes,reps,params,median_s,min_s,p95_s,enqueue_median_s,gflops,"
        "total_gflops,gbps,total_gbps,speedup,efficiency,slowest_rank,slowest_ratio,max_verify_error,status,"
        "scope,groups,group_size,op_time_s,algbw_gbps,busbw_gbps,wrong_elements,status_reason,flags,"
        "exposed_transfer_s,overlap_fraction,median_lo_s,median_hi_s,speedup_lo,speedup_hi,efficiency_lo,"
        "efficiency_hi,speedup_no_difference,baseline_file,baseline_case,baseline_median_s,baseline_ratio,"
        "baseline_ratio_lo,baseline_ratio_hi,baseline_verdict,of_vendor,vendor_case";
  const std::vector<std::string> more = more_figures(rows);
  for (const auto& key : more) os << ',' << key;
  os << '\n';
  auto opt = [&](const std::optional<double>& v) {
    if (v) os << *v;
  };
  // Strings from the file as RFC 4180 fields, control characters escaped; free text always in quotes.
  auto quoted = [](const std::string& s) { return csv_field(s, true); };
  auto field = [](const std::string& s) { return csv_field(s); };
  for (const auto& r : rows) {
    const bool ran = r.status != "skipped";
    os << quoted(r.file) << ',' << r.case_index + 1 << ',' << quoted(r.name) << ',' << field(r.workload) << ','
       << field(r.mode) << ',' << field(r.backend) << ',' << r.ranks << ',' << r.nodes << ',' << r.reps << ','
       << quoted(r.params_label) << ',';
    for (double v : {r.median_s, r.min_s, r.p95_s, r.enqueue_median_s}) {
      opt(ran ? std::optional<double>(v) : std::nullopt);
      os << ',';
    }
    for (const auto* v : {&r.gflops, &r.total_gflops, &r.gbps, &r.total_gbps, &r.speedup, &r.efficiency}) {
      opt(*v);
      os << ',';
    }
    if (ran) os << r.slowest_rank << ',' << r.slowest_ratio << ',' << r.max_verify_error;
    else os << ",,";
    os << ',' << field(r.status) << ',' << field(r.scope) << ',';
    if (!r.scope.empty()) os << r.groups << ',' << r.group_size;
    else os << ',';
    for (const auto* v : {&r.op_time_s, &r.algbw_gbps, &r.busbw_gbps}) {
      os << ',';
      opt(*v);
    }
    os << ',';
    if (!r.scope.empty() && ran) os << r.wrong_elements;
    std::string flags;
    for (const auto& f : r.flags) flags += (flags.empty() ? "" : "; ") + f;
    os << ',' << quoted(r.status_reason) << ',' << quoted(flags) << ',';
    opt(r.figure_value("exposed_transfer_s"));
    os << ',';
    opt(r.figure_value("overlap_fraction"));
    for (const auto* ci : {&r.median_ci, &r.speedup_ci, &r.efficiency_ci}) {
      os << ',';
      if (*ci) os << (*ci)->lo;
      os << ',';
      if (*ci) os << (*ci)->hi;
    }
    os << ',';
    if (r.speedup_ci) os << (no_difference(r) ? 1 : 0);
    os << ',';
    if (r.baseline) {
      const BaselineComparison& b = *r.baseline;
      const bool found = std::isfinite(b.median_s);
      os << quoted(b.file) << ',';
      if (found) os << b.case_index + 1;
      os << ',';
      opt(found ? std::optional<double>(b.median_s) : std::nullopt);
      os << ',';
      opt(found ? std::optional<double>(b.ratio) : std::nullopt);
      os << ',';
      if (b.ratio_ci) os << b.ratio_ci->lo << ',' << b.ratio_ci->hi;
      else os << ',';
      os << ',' << quoted(b.verdict);
    } else {
      os << ",,,,,,";
    }
    os << ',';
    opt(r.figure_value("of_vendor"));
    os << ',';
    if (const auto v = r.figure_value("vendor_case")) os << static_cast<std::size_t>(*v) + 1;
    for (const auto& key : more) {
      os << ',';
      if (const Figure* f = r.figure(key)) os << (f->kind == FigureKind::case_number ? f->value + 1 : f->value);
    }
    os << '\n';
  }
  return os.str();
}

}  // namespace gpuscale
