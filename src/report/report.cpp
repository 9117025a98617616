#include "report/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <tuple>

#include "core/error.hpp"
#include "core/metrics.hpp"
#include "core/plan.hpp"
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

WorkloadLookup g_lookup;  // constant-initialized: null before the registry's initializer sets it

}  // namespace

void set_workload_lookup(const WorkloadLookup& lookup) { g_lookup = lookup; }

const RowAnalysis* analysis_of(const std::string& workload) {
  return g_lookup.analysis ? g_lookup.analysis(workload) : nullptr;
}

Params typed_params(const std::string& workload, const Params& stored) {
  return g_lookup.typed_params ? g_lookup.typed_params(workload, stored) : stored;
}

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

std::vector<std::int64_t> turns_of(const CaseRecord& c) {
  if (!c.turn.empty()) return c.turn;
  std::vector<std::int64_t> turn;
  for (int rank = 0; rank < c.ranks; ++rank) turn.push_back(rank);
  return turn;
}

std::vector<double> sample_times(const CaseRecord& c) {
  return c.mode == Mode::serial ? serial_turn_totals(c.wall_start_s, c.wall_end_s, turns_of(c), c.ranks, c.reps)
                            : makespans(c.wall_start_s, c.wall_end_s, c.ranks, c.reps);
}

std::vector<const TableColumn*> phase_columns(const CaseRecord& c) {
  const CaseTable* t = find_table(c.tables, kPhasesTable);
  if (!t) return {};
  return columns_of(*t, {{"rank", ColumnType::integer}, {"sample", ColumnType::integer},
                         {"phase", ColumnType::integer}, {"start", ColumnType::real}, {"end", ColumnType::real}});
}

std::vector<std::pair<std::string, std::vector<double>>> phase_sums(const CaseRecord& c) {
  if (c.reps == 0) return {};
  const auto col = phase_columns(c);
  if (col.empty()) return {};
  const std::size_t samples = static_cast<std::size_t>(c.ranks) * c.reps;
  std::vector<std::pair<std::string, std::vector<double>>> sums;
  for (const auto& n : col[2]->levels) sums.emplace_back(n, std::vector<double>(samples, 0.0));
  for (std::size_t i = 0; i < col[0]->ints.size(); ++i) {
    const auto rank = static_cast<std::size_t>(col[0]->ints[i]), sample = static_cast<std::size_t>(col[1]->ints[i]);
    const std::size_t at = rank * c.reps + sample;
    if (at < samples) sums[static_cast<std::size_t>(col[2]->ints[i])].second[at] += col[4]->reals[i] - col[3]->reals[i];
  }
  return sums;
}

namespace {


// Where some rank's first timed sample is much slower than that rank's median: by more than kColdStartRatio, by
// more than the spread of its other samples (their interquartile range: a first sample that noisy samples could
// have given is no sign of a cold start) and by more than kColdStartFloorS (below, the time it takes to start a
// sample or wake a thread: sub-microsecond operations differ that much without being cold). Of those ranks, the one
// whose first sample is the most times its median.
struct ColdStart {
  int rank = -1;
  double ratio = 0.0, excess_s = 0.0;
};

ColdStart cold_start(const CaseRecord& c, const std::vector<bool>& in) {
  ColdStart worst;
  if (c.reps < 3) return worst;
  for (int r = 0; r < c.ranks; ++r) {
    if (!in[r]) continue;
    const double* first = c.device_time_s.data() + static_cast<std::size_t>(r) * static_cast<std::size_t>(c.reps);
    const auto reps = static_cast<std::size_t>(c.reps);
    const double med = quantile(first, reps, 0.5);
    const double over = *first - med, ratio = *first / med;
    if (!(ratio > kColdStartRatio && over > kColdStartFloorS && ratio > worst.ratio)) continue;
    // The spread of the other samples, only for a first sample that may be cold (two more passes over them).
    const double spread = quantile(first + 1, reps - 1, 0.75) - quantile(first + 1, reps - 1, 0.25);
    if (over > spread) worst = {r, ratio, over};
  }
  return worst;
}

// The cold start's note on the case, and its warning on the rank's GPU (the same words in every case, so that the
// verdict lists them once with the cases).
void cold_start_flag(const CaseRecord& c, const std::vector<bool>& in, ReportRow& row) {
  const ColdStart cold = cold_start(c, in);
  if (cold.rank < 0) return;
  row.flags.push_back("cold: the first timed sample took " + fmt("%.2fx", cold.ratio) + " the median, " +
                      format_seconds(cold.excess_s) + " more, on rank " + std::to_string(cold.rank) +
                      " (more warm-up: warmup_s)");
  row.findings.push_back({SubjectKind::gpu, "", cold.rank, "", "", Severity::warn,
                          "cold: a first timed sample well above the median (more warm-up: warmup_s)"});
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
void telemetry_flags(const RunRecord& run, const CaseRecord& c, ReportRow& row) {
  std::vector<std::string>& flags = row.flags;
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
      if (reasons & bit) {
        row.findings.push_back({SubjectKind::gpu, "", r, "", "", Severity::warn, std::string("throttled: ") + name});
      }
      if ((reasons & bit) && limited.find(name) == std::string::npos) {
        limited += std::string(limited.empty() ? "" : ", ") + name + " (rank " + std::to_string(r) + ")";
      }
    }
    const double max_clock = static_cast<std::size_t>(r) < run.ranks.size() ? run.ranks[r].max_sm_clock_mhz : NAN;
    const double m = sm.empty() ? NAN : median(sm);
    if (std::isfinite(max_clock) && max_clock > 0 && m < kLowClockShare * max_clock) {
      row.findings.push_back({SubjectKind::gpu, "", r, "", "", Severity::warn,
                              "low clocks: the SM clock's median under " + fmt("%.0f%%", 100 * kLowClockShare) +
                                  " of its maximum"});
      if (low.empty()) {  // the case's note names the first such rank
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
  // Three significant digits in the largest unit that keeps one before the point (0.9996 s is "1.00 s").
  const double a = std::fabs(s);
  if (a >= 0.9995) return format_sig3(s) + " s";
  if (a >= 0.9995e-3) return format_sig3(s * 1e3) + " ms";
  return format_sig3(s * 1e6) + " us";
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
  // What identifies a case for pairing and display.
  r.params = typed_params(c.workload, c.params.without(sample_count_keys()));
  r.params_label = label_of(r.params);
  r.scope = c.scope;
  r.comm = c.comm;
  r.groups = c.groups;
  for (auto n : c.group_size) r.group_size = std::max(r.group_size, static_cast<int>(n));
  r.note = c.note;
  r.expect = c.expect;
  return r;
}

// A transfer's numbers as nccl-tests counts them: the time of one operation
// (mean over ranks, median over samples) with its interval, algbw, busbw,
// and the fastest and the slowest rank's op time (least and most over ranks,
// median over samples).
void op_times(const CaseRecord& c, ReportRow& r) {
  const int iters = c.params.has("iters") ? static_cast<int>(c.params.get_int("iters")) : 1;
  const std::vector<double> ops = mean_op_times(c.device_time_s, c.ranks, c.reps, iters);
  r.op_time_s = median(ops);
  r.op_time_ci = median_interval(ops);
  r.algbw_gbps = mean(c.op_bytes) / *r.op_time_s / 1e9;
  r.busbw_gbps = *r.algbw_gbps * mean(c.bus_factor);
  const auto [least, most] = op_time_extremes(c.device_time_s, c.ranks, c.reps, iters);
  r.op_time_min_s = median(least);
  r.op_time_max_s = median(most);
}

// The rates: a transfer's as nccl-tests counts them (where its workload's analysis `a` says it times one operation),
// else GFLOP/s or GB/s per rank and of all ranks.
void rates(const CaseRecord& c, const RowAnalysis* a, const std::vector<bool>& in, ReportRow& r) {
  const auto part = static_cast<int>(std::count(in.begin(), in.end(), true));
  // The device times of the ranks that took part (without a copy when all did: files can be large).
  const bool all_in = part == c.ranks;
  const std::vector<double> some = all_in ? std::vector<double>() : rows_of(c.device_time_s, c.reps, in);
  const std::vector<double>& device = all_in ? c.device_time_s : some;
  const bool one_op = !a || a->times_one_operation(c);
  if (c.scope && one_op && !c.op_bytes.empty() && mean(c.op_bytes) > 0) {
    op_times(c, r);
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
  const SlowestRank slowest = slowest_rank(meds, in);
  r.slowest_rank = slowest.rank;
  r.slowest_ratio = slowest.ratio;
  r.stragglers = find_stragglers(meds, in, run.ranks, threshold);
  for (auto& line : straggler_lines(r.stragglers)) r.flags.push_back(std::move(line));
  cold_start_flag(c, in, r);
  if (std::string f = clock_flag(run, c, in, r.median_s); !f.empty()) r.flags.push_back(std::move(f));
  telemetry_flags(run, c, r);
  r.host = host_noise(run, c);
  if (!r.host.busy.empty()) r.flags.push_back("host busy: " + r.host.busy);
  if (!r.host.descheduled.empty()) r.flags.push_back("descheduled: " + r.host.descheduled);
}

}  // namespace

ReportRow report_row(const RunRecord& run, const CaseRecord& c) { return report_row(run, c, RowSettings{}); }

ReportRow report_row(const RunRecord& run, const CaseRecord& c, const RowSettings& settings) {
  ReportRow r = row_of_case(c);
  r.run_warnings = run.warnings;
  std::tie(r.node_ranks, r.node_cores) = most_crowded_node(run);
  const std::vector<std::int64_t> turn = turns_of(c);
  r.turns = turn.empty() ? 0 : static_cast<int>(*std::max_element(turn.begin(), turn.end()) + 1);
  if (c.status == CaseStatus::skipped) {  // nothing ran
    r.median_s = r.min_s = r.p95_s = r.enqueue_median_s = std::nan("");
    return r;
  }
  const auto samples = sample_times(c);
  const MedianInterval m = median_and_interval(samples);
  r.median_s = m.median;
  r.median_ci = m.interval;
  r.min_s = minimum(samples);
  r.p95_s = quantile(samples, 0.95);
  r.enqueue_median_s = median(c.enqueue_s);
  // Work of all ranks over the time it took (for serial, one after another).
  const auto in = taking_part(c);
  const RowAnalysis* a = analysis_of(c.workload);
  rates(c, a, in, r);
  for (std::size_t k = 0; k < c.wrong_elements.size(); ++k) {
    r.wrong_elements = std::max(r.wrong_elements, c.wrong_elements[k]);
    if (c.wrong_elements[k] > 0) {
      r.findings.push_back({SubjectKind::gpu, "", static_cast<int>(k), "", "", Severity::fail,
                            "wrong results: " + std::to_string(c.wrong_elements[k]) + " element(s)"});
    }
  }
  r.max_verify_error = c.verify_error.empty() ? 0.0 : maximum(c.verify_error);
  ranks_and_flags(run, c, in, settings.straggler_threshold, r);
  phase_numbers(c, in, r);
  if (settings.breakdown) r.breakdown = measured_breakdown(c, r.median_s);
  if (a) a->row(run, c, settings, r);
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

bool speedup_uncertain(const ReportRow& r) { return r.speedup_ci && r.speedup_ci->contains(1.0); }

std::string speedup_text(double speedup, const std::optional<Interval>& ci, bool interval) {
  std::string s = format_number("%.2fx", speedup);
  const bool uncertain = ci && ci->contains(1.0);
  if (interval && ci) {
    return s + " (" + format_number("%.2f", ci->lo) + "-" + format_number("%.2f", ci->hi) +
           (uncertain ? ", uncertain)" : ")");
  }
  return uncertain ? s + " (uncertain)" : s;
}

ComparedTime compared_time(const ReportRow& r) {
  if (r.op_time_s) return {*r.op_time_s, r.op_time_ci};
  return {r.median_s, r.median_ci};
}

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
    if (p.mode != Mode::parallel || p.status == CaseStatus::skipped) continue;
    for (const auto& s : rows) {
      if (s.mode == Mode::serial && s.status != CaseStatus::skipped && s.name == p.name && s.params == p.params &&
          s.ranks == p.ranks && s.nodes == p.nodes) {
        set_speedup(p, s, s.turns);
        break;
      }
    }
  }
}

std::vector<ReportRow> build_report(const RunRecord& run) { return build_report(run, RowSettings{}); }

std::vector<ReportRow> build_report(const RunRecord& run, const RowSettings& settings) {
  std::vector<ReportRow> rows;
  for (const auto& c : run.cases) rows.push_back(report_row(run, c, settings));
  relate_rows(rows);
  return rows;
}

ReportFormat parse_report_format(const std::string& s) {
  if (s == "table") return ReportFormat::table;
  if (s == "csv") return ReportFormat::csv;
  if (s == "json") return ReportFormat::json;
  if (s == "json-full") return ReportFormat::json_full;
  if (s == "trace") return ReportFormat::trace;
  throw InputError("unknown report format '" + s + "'; valid formats: table, csv, json, json-full, trace");
}

}  // namespace gpuscale
