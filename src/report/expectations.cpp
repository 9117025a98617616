#include "report/expectations.hpp"

#include <algorithm>
#include <set>

#include "core/text.hpp"

namespace gpuscale {

namespace {

// The number a limit bounds, as the report computes it (none: not measured).
std::optional<double> measure(const ReportRow& r, const std::string& limit) {
  if (limit == "max_median_s") return r.median_s;
  if (limit == "min_gflops_per_rank") return r.gflops;
  if (limit == "min_gbps_per_rank") return r.algbw_gbps ? r.algbw_gbps : r.gbps;
  if (limit == "min_busbw_gbps") return r.busbw_gbps;
  if (limit == "min_efficiency") return r.efficiency;
  if (limit == "min_of_vendor") return r.figure_value("of_vendor");
  return std::nullopt;
}

constexpr const char* kNoVendor = "no verified impl = \"vendor\" case of the same problem, mode and ranks in this run";


std::string number(const std::string& limit, double v) {
  if (limit == "max_median_s") return format_seconds(v);
  if (limit == "min_efficiency" || limit == "min_of_vendor") return format_number("%.1f%%", v * 100);
  return format_number(limit == "min_gflops_per_rank" ? "%.4g GF/s" : "%.4g GB/s", v);
}

}  // namespace

// Efficiency exists for parallel rows against a serial twin, or with group_size > 1 against group_size = 1.
// Of vendor exists for our kernels' rows, not the vendor library's.
bool limit_applies(const std::string& limit, const std::string& mode, const Params& params) {
  if (limit == "min_of_vendor") return !(params.has("impl") && params.get_string("impl") == "vendor");
  if (limit != "min_efficiency") return true;
  return mode == "parallel" && !(params.has("group_size") && params.get_int("group_size") < 2);
}

std::vector<LimitCheck> check_row(const ReportRow& r) {
  std::vector<LimitCheck> out;
  for (const auto& [limit, expected] : r.expect) {
    if (!limit_applies(limit, r.mode, r.params)) continue;
    LimitCheck c;
    c.case_index = r.case_index;
    c.label = r.name + (r.params_label.empty() ? "" : " " + r.params_label) + " [" + r.mode + "]";
    c.limit = limit;
    c.expected = expected;
    if (r.status == "skipped") {
      c.why = "the case was skipped: " + r.status_reason;
    } else {
      c.measured = measure(r, limit);
      if (r.status != "ok") c.why = "the case failed verification";
      else if (!c.measured && limit == "min_of_vendor") c.why = kNoVendor;
      else if (!c.measured) c.why = "not measured for this case";
      else c.holds = limit.rfind("max_", 0) == 0 ? *c.measured <= expected : *c.measured >= expected;
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<LimitCheck> check_expectations(const std::vector<ReportRow>& rows) {
  std::vector<LimitCheck> out;
  for (const auto& r : rows) {
    for (auto& c : check_row(r)) out.push_back(std::move(c));
  }
  return out;
}

bool all_hold(const std::vector<LimitCheck>& checks) {
  return std::all_of(checks.begin(), checks.end(), [](const LimitCheck& c) { return c.holds; });
}

std::string render_checks(const std::string& path, const std::vector<LimitCheck>& checks) {
  std::set<std::size_t> cases;
  for (const auto& c : checks) cases.insert(c.case_index);
  const auto failed = std::count_if(checks.begin(), checks.end(), [](const LimitCheck& c) { return !c.holds; });
  const std::string counts = std::to_string(checks.size()) + " limit(s) of " + std::to_string(cases.size()) +
                             " case(s)";
  if (failed == 0) return wrap(path + ": check: all " + counts + " hold");
  std::string out = wrap(path + ": check: " + std::to_string(failed) + " of " + counts + " FAILED");
  for (const auto& c : checks) {
    if (c.holds) continue;
    std::string line = "FAILED case " + std::to_string(c.case_index + 1) + " (" + c.label + "): " + c.limit + " " +
                       number(c.limit, c.expected);
    if (c.measured) line += ", measured " + number(c.limit, *c.measured);
    if (!c.why.empty()) line += "; " + c.why;
    out += wrap(line);
  }
  return out;
}

std::vector<LimitCheck> unchecked_limits(const RunRecord& run, const std::vector<ReportRow>& rows) {
  std::set<std::size_t> ran;
  for (const auto& r : rows) ran.insert(r.case_index);
  std::vector<LimitCheck> out;
  for (std::size_t i = 0; i < run.plan.size(); ++i) {
    if (ran.count(i)) continue;
    for (const auto& [limit, expected] : run.plan[i].limits) {
      LimitCheck c;
      c.case_index = i;
      c.label = run.plan[i].label;
      c.limit = limit;
      c.expected = expected;
      c.why = "the case did not run";
      out.push_back(std::move(c));
    }
  }
  return out;
}

}  // namespace gpuscale
