#include "report/side_by_side.hpp"

#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

namespace gpuscale {

namespace {

using Key = std::tuple<std::string, std::string, std::string>;  // name, parameters, mode

Key key_of(const ReportRow& r) { return {r.name, r.params_label, r.mode}; }

std::string ratio(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", x);
  return buf;
}

}  // namespace

std::string render_side_by_side(const std::vector<RunRows>& runs) {
  if (runs.size() < 2) return "";
  // Cases in the order they first appear; each file's row of each (a file may lack one).
  std::vector<Key> order;
  std::map<Key, std::vector<const ReportRow*>> cell;
  for (std::size_t f = 0; f < runs.size(); ++f) {
    for (const auto& r : runs[f].rows) {
      auto [it, fresh] = cell.try_emplace(key_of(r), runs.size(), nullptr);
      if (fresh) order.push_back(it->first);
      if (!it->second[f]) it->second[f] = &r;
    }
  }
  bool shared = false;
  for (const auto& [k, rows] : cell) {
    int in = 0;
    for (const auto* r : rows) in += r ? 1 : 0;
    shared = shared || in > 1;
  }
  if (!shared) return "";

  std::vector<std::string> head{"name", "parameters", "mode"};
  for (std::size_t f = 0; f < runs.size(); ++f) {
    head.push_back("[" + std::to_string(f + 1) + "] " + std::to_string(runs[f].ranks) + "r/" +
                   std::to_string(runs[f].nodes) + "n");
  }
  std::vector<std::vector<std::string>> cells{head};
  for (const auto& k : order) {
    // The baseline: the first file's serial run of the same case.
    const auto base_it = cell.find({std::get<0>(k), std::get<1>(k), "serial"});
    const ReportRow* base = base_it == cell.end() ? nullptr : base_it->second[0];
    std::vector<std::string> row{std::get<0>(k), std::get<1>(k), std::get<2>(k)};
    for (const auto* r : cell[k]) {
      if (!r) {
        row.push_back("-");
      } else if (r->status == "skipped" || !std::isfinite(r->median_s)) {
        row.push_back("skipped");
      } else {
        std::string c = format_seconds(r->median_s);
        if (base && base != r && std::isfinite(base->median_s)) c += " (" + ratio(base->median_s / r->median_s) + ")";
        if (r->status != "ok") c += " " + r->status;
        row.push_back(c);
      }
    }
    cells.push_back(std::move(row));
  }
  std::string out = "side by side: the median sample of each case in each file; (Nx): speedup over file [1]'s "
                    "serial run of the case\n";
  for (std::size_t f = 0; f < runs.size(); ++f) {
    out += "[" + std::to_string(f + 1) + "] " + runs[f].path + ": " + std::to_string(runs[f].ranks) + " rank(s) on " +
           std::to_string(runs[f].nodes) + " node(s)\n";
  }
  return out + align_columns(cells, [](std::size_t i) { return i < 3; });
}

}  // namespace gpuscale
