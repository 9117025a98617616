// Stragglers: ranks whose median sample takes more than a threshold longer
// than the median of the other ranks, named with where they ran (host, node,
// local rank, device), and nodes whose every rank is slower than the median
// rank of the other nodes by as much, named even when all ranks of the node
// are slow alike (then no rank stands out among its own node's).
#pragma once

#include <string>
#include <vector>

#include "io/result_model.hpp"

namespace gpuscale {

// A rank (or node) is a straggler when its median is more than this share
// above the others' median (report --straggler-threshold).
constexpr double kStragglerThreshold = 0.2;

struct Straggler {
  int rank = 0;
  std::string host;  // "" where the file has no rank table
  int node = 0, local_rank = 0;
  std::string device_name, device_pci_bus_id;
  double ratio = 1.0;  // its median / the median of the other ranks' medians
};

struct SlowNode {
  std::string host;
  int node = 0;
  std::vector<int> ranks;  // the node's ranks that took part
  double ratio = 1.0;      // its fastest rank's median / the median rank of the other nodes
};

struct Stragglers {
  std::vector<Straggler> ranks;
  std::vector<SlowNode> nodes;
};

// The rank with the largest median (of those that took part, `in`) and its
// median over the median of the other ranks' medians: the one ratio the
// slowest column, the stragglers and the limits use. Ratio 1 with one rank.
struct SlowestRank {
  int rank = 0;
  double ratio = 1.0;
};
SlowestRank slowest_rank(const std::vector<double>& rank_median_s, const std::vector<bool>& in);

// Rank `i`'s median over the median of the other medians of `med`.
double ratio_to_others(const std::vector<double>& med, std::size_t i);

// From each rank's median sample time (`in`: the ranks that took part) and
// the run's rank table (may be empty: every rank on node 0).
Stragglers find_stragglers(const std::vector<double>& rank_median_s, const std::vector<bool>& in,
                           const std::vector<RankRecord>& ranks, double threshold);

// One line per straggler and slow node, for the report's notes and flags.
std::vector<std::string> straggler_lines(const Stragglers& s);

}  // namespace gpuscale
