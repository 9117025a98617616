// The node-pair sweep in the report: each pair of nodes' bandwidth from the
// time of its round, the best pair, the pairs below a share of it, and the
// node whose every pair is below it: the one-line answer "node X's link is slow".
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "io/result_model.hpp"
#include "report/report.hpp"

namespace gpuscale {

// Pairs of nodes below this share of the best pair's bandwidth are slow (ClusterKit's 93%; report --pair-threshold).
constexpr double kNodePairThreshold = 0.93;

struct NodePairRow {
  int round = 0;  // 1..rounds
  int node_a = 0, node_b = 0;
  std::string host_a, host_b;
  // bytes x iters (one direction) / the pair's round time, the slower of its two
  // ends; median over samples; 1e9 B/s. NaN where the file has no time for it.
  double gbps = 0.0;
  double share = 0.0;  // of the best pair's
  bool slow = false;   // share below the threshold
  // Run again alone after the samples (workloads/node_pair_recheck.hpp): the median of its slower end, and of how
  // many runs; NaN and 0 where it was not.
  double alone_gbps = NAN, alone_share = NAN;
  int alone_samples = 0;
  bool confirmed = false;  // slow, and slow again alone (or slow in a file that has no second look)
};

struct NodePairVerdict {
  std::vector<NodePairRow> pairs;  // in the order of the file: by round
  double threshold = kNodePairThreshold;
  int samples = 0;         // timed sweeps the medians are over
  bool rechecked = false;  // the file has the second look (table "rechecks")
  std::size_t best = 0;    // index into pairs
  // Hostnames of the nodes whose every pair is slow: their own links are
  // (with 3 nodes or more; with 2 there is one pair, the best).
  std::vector<std::string> slow_nodes;
  std::string line;  // the answer in one line
};

// Shares, slow pairs, the best pair, the slow nodes and the line, from each pair's gbps (and alone_gbps where
// `rechecked`: a slow pair is confirmed only where it was slow again alone).
NodePairVerdict judge_node_pairs(std::vector<NodePairRow> pairs, double threshold, bool rechecked = false);

struct RowAnalysis;
struct ReportOption;
// The collective's part of the report: a node-pairs case's verdict (its section and its JSON "node_pairs"), under
// its option --pair-threshold; the sweep is not one operation (GB/s over the sweep, not algbw and busbw).
const RowAnalysis& node_pair_analysis();
// report --pair-threshold: the share of the best pair's bandwidth below which a pair is slow.
const ReportOption& pair_threshold_option();

// A node-pairs case's verdict, from its pairs table, its "round k" phases and
// its op_bytes and iters; nullopt for any other case or one without samples.
std::optional<NodePairVerdict> node_pair_verdict(const CaseRecord& c, double threshold);

// The table section of case `number` (as the report numbers cases, from 1): one line per pair, then the best pair
// and the answer.
std::string render_node_pairs(std::size_t number, const std::string& params_label, const NodePairVerdict& v);

}  // namespace gpuscale
