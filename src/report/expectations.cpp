#include "report/expectations.hpp"

#include <algorithm>
#include <set>

#include "core/text.hpp"
#include "report/report_notes.hpp"

namespace gpuscale {

namespace {

constexpr const char* kVerified = "verified";

constexpr const char* kNoVendor = "no verified impl = \"vendor\" case of the same problem, mode and ranks in this run";

// A limit's number as the report shows it; `precise`: six significant digits.
std::string number(const std::string& limit, double v, bool precise = false) {
  if (limit == "max_median_s") return precise ? format_number("%.6g s", v) : format_seconds(v);
  if (limit == "min_efficiency" || limit == "min_of_vendor") {
    return format_number(precise ? "%.6g%%" : "%.1f%%", v * 100);
  }
  // As the table prints them: ratios as "1.50x", rates to three significant digits.
  if (limit == "max_slowest_ratio") return format_number(precise ? "%.6gx" : "%.2fx", v);
  if (limit == "min_gflops_per_rank") return precise ? format_number("%.6g GF/s", v) : format_sig3(v) + " GF/s";
  return precise ? format_number("%.6g GB/s", v) : format_sig3(v) + " GB/s";
}

std::string label_of(const ReportRow& r) {
  return r.name + (r.params_label.empty() ? "" : " " + r.params_label) + " [" + mode_name(r.mode) + "]";
}

// Efficiency compares ranks at once with ranks alone: where the ranks of a node (times their BLAS threads on the
// CPU backend) outnumber its cores, they take turns on them and the ratio says nothing of the hardware.
std::string efficiency_not_applicable(const ReportRow& r) {
  if (r.node_cores <= 0) return "";
  const std::int64_t threads = r.backend == Backend::cpu && r.params.has("threads") ? r.params.get_int("threads") : 1;
  if (static_cast<std::int64_t>(r.node_ranks) * threads <= r.node_cores) return "";
  return std::to_string(r.node_ranks) + " ranks" + (threads > 1 ? " x " + std::to_string(threads) + " threads" : "") +
         " on " + std::to_string(r.node_cores) + (r.node_cores == 1 ? " core" : " cores");
}

// The case's result was right. A skipped case has none to check (its limits fail: check_row).
LimitCheck verified_check(const ReportRow& r) {
  LimitCheck c;
  c.case_index = r.case_index;
  c.label = label_of(r);
  c.limit = kVerified;
  c.holds = r.status == CaseStatus::ok;
  if (r.status == CaseStatus::skipped) {
    c.not_applicable = "the case was skipped: " + r.status_reason;
  } else if (!c.holds) {
    c.why = "the case failed verification";
    if (r.wrong_elements > 0) c.why += ": " + std::to_string(r.wrong_elements) + " wrong element(s) on a rank";
  }
  return c;
}

// The measured number as the limit is written; with six digits where it would read as the limit itself
// ("FAILED, measured 1.5x" under 1.5x: 1.50312x).
std::string measured_text(const LimitCheck& c) {
  const std::string text = number(c.limit, *c.measured);
  const bool reads_as_limit = text == number(c.limit, c.expected) && *c.measured != c.expected;
  return reads_as_limit ? number(c.limit, *c.measured, true) : text;
}

// "min_efficiency 80.0%", "verified".
std::string limit_text(const LimitCheck& c) {
  return c.limit == kVerified ? c.limit : c.limit + " " + number(c.limit, c.expected);
}

// "FAILED", and what the host did where that may be why: "FAILED (host busy: others used 63% of ...)".
std::string failed_text(const LimitCheck& c) { return c.host.empty() ? "FAILED" : "FAILED (" + c.host + ")"; }

// What a limit came to, after its name: "holds, measured 1.02x", "FAILED; the case did not run", "not applicable:
// 4 ranks on 2 cores".
std::string outcome(const LimitCheck& c) {
  if (!c.not_applicable.empty()) return "not applicable: " + c.not_applicable;
  std::string s = c.holds ? "holds" : failed_text(c);
  if (c.measured) s += ", measured " + measured_text(c);
  if (!c.why.empty()) s += "; " + c.why;
  return s;
}

// Each line of `text` two spaces in: a limit's lines under its case's (wrap keeps no leading space).
std::string indented(const std::string& text) {
  std::string out;
  for (std::size_t from = 0; from < text.size();) {
    const std::size_t end = text.find('\n', from);
    const std::size_t to = end == std::string::npos ? text.size() : end + 1;
    out += "  " + text.substr(from, to - from);
    from = to;
  }
  return out;
}

// "12 limits", "1 case".
std::string count_of(std::size_t n, const char* what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

// A case's heading and the lines of its limits (`every`: all of them, else those that failed), four spaces in
// where a line goes on, so that it reads as no limit of its own; "" where it has none to show.
std::string case_lines(const std::vector<LimitCheck>& checks, bool every) {
  std::string out;
  for (const auto& c : checks) {
    if (!every && (c.holds || !c.not_applicable.empty())) continue;
    out += indented(wrap(limit_text(c) + ": " + outcome(c), 78));
  }
  if (out.empty()) return "";
  return wrap("case " + std::to_string(checks.front().case_index + 1) + " (" + checks.front().label + "):", 80,
              "    ") + out;
}

// The limits that do not apply, a line per limit and reason: "not applicable: min_efficiency 80.0% in cases 2, 4:
// 2 ranks on 1 core".
std::string not_applicable_lines(const std::vector<LimitCheck>& checks) {
  std::vector<std::pair<std::string, std::vector<std::size_t>>> lines;  // limit and reason, its cases
  for (const auto& c : checks) {
    if (c.not_applicable.empty()) continue;
    const std::string what = limit_text(c) + "\n" + c.not_applicable;
    auto it = std::find_if(lines.begin(), lines.end(), [&what](const auto& l) { return l.first == what; });
    if (it == lines.end()) it = lines.insert(lines.end(), {what, {}});
    it->second.push_back(c.case_index + 1);
  }
  std::string out;
  for (const auto& [what, cases] : lines) {
    const std::size_t nl = what.find('\n');
    out += wrap("not applicable: " + what.substr(0, nl) + " in case" + (cases.size() == 1 ? " " : "s ") +
                case_list(cases) + ": " + what.substr(nl + 1), 80, "    ");
  }
  return out;
}

}  // namespace

std::optional<double> limit_measure(const ReportRow& r, const std::string& limit) {
  if (limit == "max_median_s") return r.median_s;
  if (limit == "min_gflops_per_rank") return r.gflops;
  if (limit == "min_gbps_per_rank") return r.algbw_gbps ? r.algbw_gbps : r.gbps;
  if (limit == "min_busbw_gbps") return r.busbw_gbps;
  if (limit == "min_efficiency") return r.efficiency;
  if (limit == "min_of_vendor") return r.figure_value("of_vendor");
  if (limit == "max_slowest_ratio") return r.slowest_ratio;
  return std::nullopt;
}

// Efficiency exists for parallel rows against a serial twin, or with group_size > 1 against group_size = 1.
// Of vendor exists for our kernels' rows, not the vendor library's.
bool limit_applies(const std::string& limit, Mode mode, const Params& params) {
  if (limit == "min_of_vendor") return !(params.has("impl") && params.get_string("impl") == "vendor");
  if (limit != "min_efficiency") return true;
  return mode == Mode::parallel && !(params.has("group_size") && params.get_int("group_size") < 2);
}

std::pair<int, int> most_crowded_node(const RunRecord& run) {
  std::pair<int, int> most{0, 0};
  for (const auto& r : run.ranks) {
    if (r.node_cores <= 0) continue;  // not known
    // ranks / cores above the most's, without dividing
    if (most.second == 0 || static_cast<long long>(r.local_size) * most.second >
                                static_cast<long long>(most.first) * r.node_cores) {
      most = {r.local_size, r.node_cores};
    }
  }
  return most;
}

std::vector<LimitCheck> check_row(const ReportRow& r) {
  std::vector<LimitCheck> out;
  for (const auto& [limit, expected] : r.expect) {
    if (!limit_applies(limit, r.mode, r.params)) continue;
    LimitCheck c;
    c.case_index = r.case_index;
    c.label = label_of(r);
    c.limit = limit;
    c.expected = expected;
    if (limit == "min_efficiency") c.not_applicable = efficiency_not_applicable(r);
    if (r.status == CaseStatus::skipped) {
      c.why = "the case was skipped: " + r.status_reason;
    } else {
      c.measured = limit_measure(r, limit);
      if (r.status != CaseStatus::ok) c.why = "the case failed verification";
      else if (!c.measured && limit == "min_of_vendor") c.why = kNoVendor;
      else if (!c.measured) c.why = "not measured for this case";
      else c.holds = limit.rfind("max_", 0) == 0 ? *c.measured <= expected : *c.measured >= expected;
      if (!c.holds && r.host.doubtful()) c.host = r.host.why();
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<LimitCheck> check_expectations(const std::vector<ReportRow>& rows) {
  std::vector<LimitCheck> out;
  for (const auto& r : rows) {
    if (r.expect.empty()) continue;
    out.push_back(verified_check(r));
    for (auto& c : check_row(r)) out.push_back(std::move(c));
  }
  return out;
}

bool all_hold(const std::vector<LimitCheck>& checks) {
  return std::all_of(checks.begin(), checks.end(),
                     [](const LimitCheck& c) { return c.holds || !c.not_applicable.empty(); });
}

std::string render_check_lines(const std::vector<LimitCheck>& checks, bool every) {
  std::string out;
  for (std::size_t from = 0; from < checks.size();) {
    std::size_t to = from;
    while (to < checks.size() && checks[to].case_index == checks[from].case_index) ++to;
    out += case_lines({checks.begin() + static_cast<std::ptrdiff_t>(from),
                       checks.begin() + static_cast<std::ptrdiff_t>(to)}, every);
    from = to;
  }
  return every ? out : out + not_applicable_lines(checks);
}

std::string check_summary(const std::string& path, const std::vector<LimitCheck>& checks) {
  std::set<std::size_t> cases;
  for (const auto& c : checks) cases.insert(c.case_index);
  const auto count = [&checks](auto pred) {
    return static_cast<std::size_t>(std::count_if(checks.begin(), checks.end(), pred));
  };
  const std::size_t na = count([](const LimitCheck& c) { return !c.not_applicable.empty(); });
  const std::size_t failed = count([](const LimitCheck& c) { return !c.holds && c.not_applicable.empty(); });
  const std::size_t hold = checks.size() - na - failed;
  std::string out = path + ": check: " + count_of(checks.size(), "limit") + " checked in " +
                    count_of(cases.size(), "case") + ": ";
  if (failed == 0 && na == 0) {
    out += "all hold";
  } else {
    out += std::to_string(hold) + (hold == 1 ? " holds" : " hold");
    if (failed > 0) out += ", " + std::to_string(failed) + " FAILED";
    if (na > 0) out += ", " + std::to_string(na) + " not applicable";
  }
  return wrap(out, 80, "    ");
}

std::string render_checks(const std::string& path, const std::vector<LimitCheck>& checks, bool every) {
  return render_check_lines(checks, every) + check_summary(path, checks);
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
