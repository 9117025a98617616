#include "report/fleet_baseline.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/stats.hpp"
#include "core/text.hpp"
#include "report/expectations.hpp"

#include <toml++/toml.h>

namespace gpuscale {

namespace {

// The limit that bounds the number a case is rated by, as the report's table rates it: a transfer's busbw (its algbw
// where it has none), GFLOP/s, GB/s, else the median sample time. Its values are limit_measure's, as --check's.
std::string rated_limit(const ReportRow& r) {
  if (r.busbw_gbps) return "min_busbw_gbps";
  if (r.algbw_gbps) return "min_gbps_per_rank";
  if (r.gflops) return "min_gflops_per_rank";
  if (r.gbps) return "min_gbps_per_rank";
  return "max_median_s";
}

bool same_case(const CaseLimit& l, const ReportRow& r) {
  return l.experiment == r.name && l.workload == r.workload && l.params == r.params_label && l.mode == r.mode &&
         l.ranks == r.ranks && l.nodes == r.nodes;
}

bool same_case(const CaseLimit& a, const CaseLimit& b) {
  return a.experiment == b.experiment && a.workload == b.workload && a.params == b.params && a.mode == b.mode &&
         a.ranks == b.ranks && a.nodes == b.nodes;
}

std::string unit_of(const std::string& limit) {
  return limit == "min_gflops_per_rank" ? " GFLOP/s" : limit == "max_median_s" ? " s" : " GB/s";
}

// The limit of one case from its values in the runs (those measured on a quiet host).
void set_limit(CaseLimit& l, const std::vector<double>& values, std::size_t runs, std::size_t noisy) {
  if (values.size() < kMinBaselineRuns) {
    l.skipped = std::to_string(values.size()) + " of " + std::to_string(runs) + " runs measured it" +
                (noisy ? " on a quiet host (" + std::to_string(noisy) + " with the host busy or a rank descheduled, "
                         "left out)" : "") + "; " +
                std::to_string(kMinBaselineRuns) + " needed";
    return;
  }
  const double centre = median(values);
  const double scatter = run_scatter(values, centre);
  const double margin = std::max(kBaselineMargin, kBaselineScatterWidths * scatter);
  const bool upper = l.limit.rfind("max_", 0) == 0;
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  const std::string spread = "median " + format_sig3(centre) + unit_of(l.limit) + " of " +
                             std::to_string(values.size()) + " runs (" + format_sig3(*lo) + "-" + format_sig3(*hi) +
                             "), scatter " + format_number("%.1f%%", 100 * scatter);
  if (!upper && margin >= 1) {  // a lower limit at or below 0 holds for anything (and is no limit to the reader)
    l.skipped = spread + ": " + format_number("%.0f", kBaselineScatterWidths) + "x that is " +
                format_number("%.0f%%", 100 * margin) + ", which leaves no lower limit above 0";
    return;
  }
  l.value = upper ? centre * (1 + margin) : centre * (1 - margin);
  l.comment = spread + ": " + format_number("%.0f%%", 100 * margin) + (upper ? " above" : " below") + " the median" +
              (noisy ? "; " + std::to_string(noisy) + " run(s) with the host busy or a rank descheduled left out" : "");
  if (margin > 0.2) l.comment += "; too scattered to catch a change of 20%";
}

void check_runs(const std::vector<std::pair<std::string, std::pair<RunRecord, std::vector<ReportRow>>>>& runs) {
  if (runs.size() < kMinBaselineRuns) {
    throw InputError("a baseline needs at least " + std::to_string(kMinBaselineRuns) + " runs of one config, got " +
                     std::to_string(runs.size()) + ": nothing written");
  }
  std::vector<std::pair<std::string, const RunRecord*>> files;
  for (const auto& [path, run] : runs) files.emplace_back(path, &run.first);
  if (const std::string twice = same_run_twice(files); !twice.empty()) throw InputError(twice + ": nothing written");
  const RunRecord& first = runs.front().second.first;
  for (const auto& [path, run] : runs) {
    if (!run.first.complete) {
      throw InputError(path + ": the run did not complete (status: " + run.first.status + "): a baseline takes "
                       "whole runs");
    }
    if (run.first.config_text != first.config_text || run.first.config_overrides != first.config_overrides) {
      throw InputError(path + " is a run of another config (" + run.first.config_file + ") than " +
                       runs.front().first + " (" + first.config_file + "): a baseline takes runs of one config");
    }
  }
}

}  // namespace

std::string same_run_twice(const std::vector<std::pair<std::string, const RunRecord*>>& files) {
  const auto identity = [](const RunRecord& run) {
    std::string id = run.date;
    for (const auto& r : run.ranks) id += "|" + std::to_string(r.pid) + "@" + r.hostname;
    return id;
  };
  for (std::size_t i = 0; i < files.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (identity(*files[i].second) != identity(*files[j].second)) continue;
      return files[i].first + " holds the same run as " + files[j].first + " (started " + files[i].second->date +
             ", the same ranks' pids and hosts: one file by two paths, or a copy): each run counts once";
    }
  }
  return "";
}

FleetBaseline derive_baseline(
    const std::vector<std::pair<std::string, std::pair<RunRecord, std::vector<ReportRow>>>>& runs) {
  check_runs(runs);
  FleetBaseline b;
  b.config_file = runs.front().second.first.config_file;
  for (const auto& [path, run] : runs) b.files.push_back(path);
  for (const ReportRow& r : runs.front().second.second) {
    CaseLimit l{r.name, r.workload, r.params_label, r.mode, r.ranks, r.nodes, rated_limit(r), 0.0, "", ""};
    std::vector<double> values;
    std::size_t noisy = 0;
    for (const auto& [path, run] : runs) {
      for (const ReportRow& x : run.second) {
        if (!same_case(l, x) || x.status != CaseStatus::ok) continue;
        const auto v = limit_measure(x, l.limit);
        if (x.host.doubtful()) {
          ++noisy;
        } else if (v && std::isfinite(*v) && *v > 0) {
          values.push_back(*v);
        }
        break;
      }
    }
    set_limit(l, values, runs.size(), noisy);
    b.cases.push_back(std::move(l));
  }
  return b;
}

namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string limits_toml(const FleetBaseline& b) {
  std::string out = "# gpuscale baseline: expected values per case from " + std::to_string(b.files.size()) +
                    " runs of " + b.config_file + "\n";
  for (const auto& f : b.files) out += "#   " + f + "\n";
  out += "# Each limit: the median of the runs, less (a time: plus) the larger of " +
         format_number("%.0f%%", 100 * kBaselineMargin) + " and " + format_number("%.0f", kBaselineScatterWidths) +
         "x their scatter; runs on a busy host are left out.\n# Check a run of the same config with: gpuscale report "
         "RUN.h5 --check --expect THIS_FILE\ngpuscale_limits = " + std::to_string(kLimitsFormat) + "\n";
  for (const auto& c : b.cases) {
    out += "\n[[case]]\nexperiment = " + quoted(c.experiment) + "\nworkload = " + quoted(c.workload) +
           "\nparams = " + quoted(c.params) + "\nmode = " + quoted(mode_name(c.mode)) + "\nranks = " +
           std::to_string(c.ranks) + "\nnodes = " + std::to_string(c.nodes) + "\n";
    out += c.skipped.empty() ? c.limit + " = " + format_number("%.6g", c.value) + "   # " + c.comment + "\n"
                             : "# no limit: " + c.skipped + "\n";
  }
  return out;
}

namespace {

[[noreturn]] void not_limits(const std::string& path, const std::string& why) {
  throw InputError(path + ": not a gpuscale limits file (from 'gpuscale baseline'): " + why);
}

// "FILE:LINE: case N: ", the line of `node` (of the case's table where the key is missing).
std::string where_in(const std::string& path, const toml::node& node, std::size_t index) {
  return path + ":" + std::to_string(node.source().begin.line) + ": case " + std::to_string(index + 1) + ": ";
}

CaseLimit read_case(const std::string& path, const toml::table& t, std::size_t index) {
  const auto where = [&](const char* key) { return where_in(path, t.get(key) ? *t.get(key) : t, index); };
  CaseLimit l;
  const auto text = [&](const char* key) {
    const auto v = t[key].value_exact<std::string>();
    if (!v) throw InputError(where(key) + "'" + key + "' is missing or not a string");
    return *v;
  };
  const auto integer = [&](const char* key) {  // ranks, nodes: as a result file's (int)
    const auto v = t[key].value_exact<std::int64_t>();
    if (!v || *v < 1 || *v > std::numeric_limits<int>::max()) {
      throw InputError(where(key) + "'" + key + "' is missing or not a whole number from 1 to " +
                       std::to_string(std::numeric_limits<int>::max()));
    }
    return static_cast<int>(*v);
  };
  l.experiment = text("experiment");
  l.workload = text("workload");
  l.params = text("params");
  const auto mode = parse_mode(text("mode"));
  if (!mode) throw InputError(where("mode") + "'mode' is " + text("mode") + ", not serial or parallel");
  l.mode = *mode;
  l.ranks = integer("ranks");
  l.nodes = integer("nodes");
  for (const auto& [key, node] : t) {
    const std::string k(key.str());
    if (k == "experiment" || k == "workload" || k == "params" || k == "mode" || k == "ranks" || k == "nodes") continue;
    const std::string at = where_in(path, node, index);
    if (k != "min_busbw_gbps" && k != "min_gbps_per_rank" && k != "min_gflops_per_rank" && k != "max_median_s") {
      throw InputError(at + "unknown key '" + k + "' (a limit is min_busbw_gbps, min_gbps_per_rank, "
                       "min_gflops_per_rank or max_median_s)");
    }
    if (!l.limit.empty()) {
      throw InputError(at + "a second limit, '" + k + "', beside '" + l.limit + "': a case holds one limit");
    }
    const auto v = node.value<double>();
    if (!v || !(*v > 0) || !std::isfinite(*v)) throw InputError(at + "'" + k + "' is not a number above 0");
    l.limit = k;
    l.value = *v;
  }
  if (l.limit.empty()) l.skipped = "no limit";
  return l;
}

}  // namespace

std::vector<CaseLimit> read_limits_file(const std::string& path) {
  check_input_file(path, "limits file");  // before it is opened: a FIFO would wait for a writer
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {  // a duplicate key among them
    throw InputError(path + ":" + std::to_string(e.source().begin.line) + ": not a gpuscale limits file (from "
                     "'gpuscale baseline'): " + std::string(e.description()));
  }
  const auto format = root["gpuscale_limits"].value<std::int64_t>();
  if (!format) not_limits(path, "it has no key gpuscale_limits");
  if (*format != kLimitsFormat) {
    throw InputError(path + ": limits file format " + std::to_string(*format) + "; this gpuscale reads format " +
                     std::to_string(kLimitsFormat));
  }
  for (const auto& [key, node] : root) {
    const std::string k(key.str());
    if (k != "gpuscale_limits" && k != "case") not_limits(path, "unknown key '" + k + "' (it holds [[case]] tables)");
  }
  std::vector<CaseLimit> out;
  if (const toml::array* cases = root["case"].as_array()) {
    for (std::size_t i = 0; i < cases->size(); ++i) {
      const toml::table* t = (*cases)[i].as_table();
      if (!t) not_limits(path, "'case' is not an array of tables");
      CaseLimit l = read_case(path, *t, i);
      const auto twin = std::find_if(out.begin(), out.end(), [&](const CaseLimit& o) { return same_case(o, l); });
      if (twin != out.end()) {
        throw InputError(where_in(path, *t, i) + "the same case as case " + std::to_string(twin - out.begin() + 1) +
                         " (experiment, workload, params, mode, ranks and nodes): one [[case]] a case");
      }
      out.push_back(std::move(l));
    }
  }
  return out;
}

std::size_t apply_limits(std::vector<ReportRow>& rows, const std::vector<CaseLimit>& limits) {
  std::size_t n = 0;
  for (ReportRow& r : rows) {
    r.expect.clear();
    const auto it = std::find_if(limits.begin(), limits.end(), [&](const CaseLimit& l) { return same_case(l, r); });
    if (it == limits.end() || it->limit.empty()) continue;
    r.expect.emplace_back(it->limit, it->value);
    ++n;
  }
  return n;
}

}  // namespace gpuscale
