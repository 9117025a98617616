#include "report/stragglers.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "core/stats.hpp"

namespace gpuscale {

namespace {

std::string times(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", ratio);
  return buf;
}

}  // namespace

double ratio_to_others(const std::vector<double>& med, std::size_t i) {
  std::vector<double> rest;
  for (std::size_t j = 0; j < med.size(); ++j) {
    if (j != i) rest.push_back(med[j]);
  }
  return rest.empty() ? 1.0 : med[i] / median(rest);
}

SlowestRank slowest_rank(const std::vector<double>& rank_median_s, const std::vector<bool>& in) {
  std::vector<int> who;
  std::vector<double> med;
  for (std::size_t r = 0; r < rank_median_s.size() && r < in.size(); ++r) {
    if (!in[r]) continue;
    who.push_back(static_cast<int>(r));
    med.push_back(rank_median_s[r]);
  }
  if (med.empty()) return {};
  const std::size_t i = static_cast<std::size_t>(std::max_element(med.begin(), med.end()) - med.begin());
  return {who[i], ratio_to_others(med, i)};
}

Stragglers find_stragglers(const std::vector<double>& rank_median_s, const std::vector<bool>& in,
                           const std::vector<RankRecord>& ranks, double threshold) {
  Stragglers out;
  std::vector<int> who;  // ranks that took part
  std::vector<double> med;
  for (std::size_t r = 0; r < rank_median_s.size() && r < in.size(); ++r) {
    if (in[r]) {
      who.push_back(static_cast<int>(r));
      med.push_back(rank_median_s[r]);
    }
  }
  if (who.size() < 2) return out;
  const auto rec = [&](int r) { return static_cast<std::size_t>(r) < ranks.size() ? ranks[r] : RankRecord{}; };
  for (std::size_t i = 0; i < who.size(); ++i) {
    const double ratio = ratio_to_others(med, i);
    if (!(ratio > 1.0 + threshold)) continue;
    const RankRecord rr = rec(who[i]);
    out.ranks.push_back({who[i], rr.hostname, rr.node_index, rr.local_rank, rr.device_name, rr.device_pci_bus_id, ratio});
  }
  // Nodes: slow when even the node's fastest rank is slower than the median
  // rank of the other nodes by more than the threshold (every rank of it slow).
  std::map<int, std::vector<std::size_t>> by_node;
  for (std::size_t i = 0; i < who.size(); ++i) by_node[rec(who[i]).node_index].push_back(i);
  if (by_node.size() < 2) return out;
  for (const auto& [node, idx] : by_node) {
    double fastest = med[idx.front()];
    for (auto i : idx) fastest = std::min(fastest, med[i]);
    std::vector<double> others;
    for (std::size_t i = 0; i < who.size(); ++i) {
      if (rec(who[i]).node_index != node) others.push_back(med[i]);
    }
    const double ratio = fastest / median(others);
    if (!(ratio > 1.0 + threshold)) continue;
    SlowNode sn;
    sn.node = node;
    sn.ratio = ratio;
    for (auto i : idx) {
      sn.ranks.push_back(who[i]);
      sn.host = rec(who[i]).hostname;
    }
    out.nodes.push_back(std::move(sn));
  }
  return out;
}

std::vector<std::string> straggler_lines(const Stragglers& s) {
  std::vector<std::string> out;
  for (const auto& n : s.nodes) {
    std::string ranks;
    for (int r : n.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
    out.push_back("slow node: " + (n.host.empty() ? "node " + std::to_string(n.node) : n.host) + " (ranks " + ranks +
                  "): its fastest rank " + times(n.ratio) + " the other nodes' median rank");
  }
  for (const auto& r : s.ranks) {
    std::string where = r.host.empty() ? "" : " on " + r.host;
    where += " (node " + std::to_string(r.node) + ", local rank " + std::to_string(r.local_rank);
    if (!r.device_name.empty()) where += ", " + r.device_name;
    if (!r.device_pci_bus_id.empty()) where += " " + r.device_pci_bus_id;
    out.push_back("straggler: rank " + std::to_string(r.rank) + where + "): median " + times(r.ratio) +
                  " the other ranks'");
  }
  return out;
}

}  // namespace gpuscale
