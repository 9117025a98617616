#include "workloads/node_pairs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "core/stats.hpp"
#include "core/text.hpp"
#include "report/analysis.hpp"
#include "workloads/node_pair_recheck.hpp"
#include "workloads/node_pair_table.hpp"

#include <nlohmann/json.hpp>

namespace gpuscale {

namespace {

std::string percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", share * 100);
  return buf;
}

std::string pair_name(const NodePairRow& p) { return p.host_a + " - " + p.host_b; }

bool is_sweep(const CaseRecord& c) { return c.scope == Scope::node_pairs; }

// "; run again alone, 2 of 3 slow pairs were slow again": what the second look saw ("" without one).
std::string second_look(const NodePairVerdict& v) {
  if (!v.rechecked) return "";
  int slow = 0, again = 0;
  for (const auto& p : v.pairs) {
    slow += p.slow ? 1 : 0;
    again += p.confirmed ? 1 : 0;
  }
  return "; run again alone, " + std::to_string(again) + " of " + std::to_string(slow) + " slow pair(s) " +
         (again == 1 ? "was" : "were") + " slow again";
}

// The best pair, and each pair's share of it, slow and confirmed; false where no pair was timed.
bool share_of_best(NodePairVerdict& v) {
  double best = -1;
  for (std::size_t i = 0; i < v.pairs.size(); ++i) {
    if (std::isfinite(v.pairs[i].gbps) && v.pairs[i].gbps > best) {
      best = v.pairs[i].gbps;
      v.best = i;
    }
  }
  if (!(best > 0)) return false;
  for (auto& p : v.pairs) {
    p.share = p.gbps / best;  // NaN stays NaN, and not slow: nothing is known about it
    p.slow = p.share < v.threshold;
    p.alone_share = p.alone_gbps / best;
    p.confirmed = p.slow && (!v.rechecked || p.alone_share < v.threshold);
  }
  return true;
}

}  // namespace

NodePairVerdict judge_node_pairs(std::vector<NodePairRow> pairs, double threshold, bool rechecked) {
  NodePairVerdict v;
  v.pairs = std::move(pairs);
  v.threshold = threshold;
  v.rechecked = rechecked;
  const std::string of_best = " of the best pair (threshold " + percent(threshold) + ")";
  if (!share_of_best(v)) {
    v.line = "no pair was timed";
    return v;
  }
  // Each node: its name, and whether every one of its pairs is slow.
  std::map<int, std::string> host;
  std::map<int, bool> all_slow;
  for (const auto& p : v.pairs) {
    for (const auto& [node, name] : {std::pair{p.node_a, p.host_a}, std::pair{p.node_b, p.host_b}}) {
      host[node] = name;
      all_slow[node] = all_slow.count(node) ? all_slow[node] && p.slow : p.slow;
    }
  }
  std::vector<int> slow_nodes;
  for (const auto& [node, slow] : all_slow) {
    if (slow) slow_nodes.push_back(node);
  }
  const auto has = [](const NodePairRow& p, int node) { return p.node_a == node || p.node_b == node; };
  const auto listed = [&](const std::vector<const NodePairRow*>& ps) {
    std::string s;
    for (const auto* p : ps) s += (s.empty() ? "" : ", ") + pair_name(*p) + " (" + percent(p->share) + ")";
    return s;
  };
  std::vector<const NodePairRow*> slow, others;  // others: slow pairs without a slow node
  for (const auto& p : v.pairs) {
    if (!p.slow) continue;
    slow.push_back(&p);
    if (std::none_of(slow_nodes.begin(), slow_nodes.end(), [&](int n) { return has(p, n); })) others.push_back(&p);
  }
  if (slow.empty()) {
    const NodePairRow* worst = &v.pairs[v.best];
    for (const auto& p : v.pairs) {
      if (p.share < worst->share) worst = &p;
    }
    v.line = "no slow link: every pair reaches at least " + percent(threshold) + " of the best pair (the slowest, " +
             pair_name(*worst) + ", " + percent(worst->share) + ")";
    return v;
  }
  if (!slow_nodes.empty()) {
    // A node whose every pair is slow: its own link, not the path between two nodes.
    double lo = INFINITY, hi = -INFINITY;
    std::string names;
    for (std::size_t k = 0; k < slow_nodes.size(); ++k) {
      v.slow_nodes.push_back(host[slow_nodes[k]]);
      names += (k == 0 ? "" : k + 1 == slow_nodes.size() ? " and " : ", ") + host[slow_nodes[k]];
    }
    for (const auto& p : v.pairs) {
      if (std::any_of(slow_nodes.begin(), slow_nodes.end(), [&](int n) { return has(p, n); })) {
        lo = std::min(lo, p.share);
        hi = std::max(hi, p.share);
      }
    }
    const std::string range = percent(lo) == percent(hi) ? percent(lo) : percent(lo) + "–" + percent(hi);
    v.line = slow_nodes.size() == 1 ? "node " + names + "'s link is slow: pairs with it reach " + range + of_best
                                    : "nodes " + names + " have slow links: pairs with them reach " + range + of_best;
    if (!others.empty()) v.line += "; also below the threshold: " + listed(others);
    v.line += second_look(v);
    return v;
  }
  // Slow pairs, but every node reaches the threshold with some other: the paths between them, or noise.
  v.line = std::to_string(slow.size()) + " pair(s) below " + percent(threshold) +
           " of the best pair, and no node with all of its pairs below: " + listed(slow) + second_look(v);
  return v;
}

namespace {

// The second look's time of each pair (its slower end's median alone), where it ran again; false where the file
// has no second look.
bool add_rechecks(const CaseRecord& c, double iters, const std::vector<std::pair<std::size_t, std::size_t>>& ends,
                  std::vector<NodePairRow>& rows) {
  const CaseTable* t = find_table(c.tables, kRechecksTable);
  if (!t) return false;
  const auto rc = columns_of(*t, {{"rank", ColumnType::integer}, {"round", ColumnType::integer},
                                  {"alone_seconds", ColumnType::real}, {"alone_samples", ColumnType::integer}});
  if (rc.empty()) return false;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    double slower = 0;
    int runs = 0;
    for (std::size_t k = 0; k < t->rows(); ++k) {
      const auto rank = static_cast<std::size_t>(rc[0]->ints[k]);
      if (rc[1]->ints[k] != rows[i].round || (rank != ends[i].first && rank != ends[i].second)) continue;
      if (!std::isfinite(rc[2]->reals[k]) || rc[3]->ints[k] < 1) continue;
      slower = std::max(slower, rc[2]->reals[k]);
      runs = runs == 0 ? static_cast<int>(rc[3]->ints[k]) : std::min(runs, static_cast<int>(rc[3]->ints[k]));
    }
    if (slower > 0 && ends[i].first < c.op_bytes.size()) {
      rows[i].alone_gbps = c.op_bytes[ends[i].first] * iters / slower / 1e9;
      rows[i].alone_samples = runs;
    }
  }
  return true;
}

}  // namespace

std::optional<NodePairVerdict> node_pair_verdict(const CaseRecord& c, double threshold) {
  const CaseTable* pairs = find_table(c.tables, kPairsTable);
  if (!is_sweep(c) || c.status == CaseStatus::skipped || c.reps < 1 || !pairs) return std::nullopt;
  const auto pc = columns_of(*pairs, {{"round", ColumnType::integer}, {"node_a", ColumnType::integer},
                                      {"node_b", ColumnType::integer}, {"rank_a", ColumnType::integer},
                                      {"rank_b", ColumnType::integer}, {"host_a", ColumnType::text},
                                      {"host_b", ColumnType::text}});
  if (pc.empty() || pairs->rows() == 0) return std::nullopt;
  // Each rank's time in each round of each sample ([rank][rep]); 0 where the rank was not in it.
  const auto took = phase_sums(c);
  const std::size_t reps = static_cast<std::size_t>(c.reps), ranks = static_cast<std::size_t>(c.ranks);
  const double iters = c.params.has("iters") ? static_cast<double>(c.params.get_int("iters")) : 1.0;
  std::vector<NodePairRow> rows;
  std::vector<std::pair<std::size_t, std::size_t>> ends;  // each row's world ranks
  for (std::size_t i = 0; i < pairs->rows(); ++i) {
    NodePairRow p;
    p.round = static_cast<int>(pc[0]->ints[i]);
    p.node_a = static_cast<int>(pc[1]->ints[i]);
    p.node_b = static_cast<int>(pc[2]->ints[i]);
    p.host_a = pc[5]->texts[i];
    p.host_b = pc[6]->texts[i];
    p.gbps = NAN;
    const std::string round = "round " + std::to_string(p.round);
    const auto name = std::find_if(took.begin(), took.end(), [&](const auto& t) { return t.first == round; });
    const auto a = static_cast<std::size_t>(pc[3]->ints[i]), b = static_cast<std::size_t>(pc[4]->ints[i]);
    ends.emplace_back(a, b);
    if (name != took.end() && a < ranks && b < ranks && a < c.op_bytes.size()) {
      const std::vector<double>& in_round = name->second;
      std::vector<double> times;  // the pair's round took as long as its slower end
      for (std::size_t s = 0; s < reps; ++s) {
        const double t = std::max(in_round[a * reps + s], in_round[b * reps + s]);
        if (t > 0) times.push_back(t);
      }
      if (!times.empty()) p.gbps = c.op_bytes[a] * iters / median(times) / 1e9;
    }
    rows.push_back(std::move(p));
  }
  const bool rechecked = add_rechecks(c, iters, ends, rows);
  NodePairVerdict v = judge_node_pairs(std::move(rows), threshold, rechecked);
  v.samples = c.reps;
  return v;
}

std::string render_node_pairs(std::size_t number, const std::string& params_label, const NodePairVerdict& v) {
  std::ostringstream os;
  std::set<int> nodes;
  int rounds = 0;
  for (const auto& p : v.pairs) {
    nodes.insert(p.node_a);
    nodes.insert(p.node_b);
    rounds = std::max(rounds, p.round);
  }
  os << "node pairs, case " << number << ": " << nodes.size() << " nodes, " << v.pairs.size() << " pairs in " << rounds
     << " round(s)\n"
     << "  " << wrap("(" + params_label + ") bandwidth = bytes x iters one way / the pair's round time (its slower end), "
             "median over " + std::to_string(v.samples) + " sweep(s)", 78, "  ");
  std::vector<std::vector<std::string>> cells{{"round", "pair", "bandwidth", "of best", "alone", ""}};
  for (std::size_t i = 0; i < v.pairs.size(); ++i) {
    const NodePairRow& p = v.pairs[i];
    const std::string slow = !p.slow ? "" : !v.rechecked || p.confirmed ? "below " + percent(v.threshold)
                                                                           : "below " + percent(v.threshold) +
                                                                                 ", not alone";
    cells.push_back({std::to_string(p.round), pair_name(p),
                     std::isfinite(p.gbps) ? format_sig3(p.gbps) + " GB/s" : "-",
                     std::isfinite(p.share) ? percent(p.share) : "-",
                     std::isfinite(p.alone_share) ? percent(p.alone_share) : "-", i == v.best ? "best" : slow});
  }
  if (v.rechecked) {
    os << "  alone: the pair run again by itself after the samples, where one more sweep found it below " +
              percent(kNodePairThreshold) + " (median of its runs)\n";
  }
  const std::string table = align_columns(cells, [](std::size_t i) { return i == 1 || i == 5; });
  for (std::size_t from = 0; from < table.size();) {  // indented under the header
    const std::size_t nl = table.find('\n', from);
    os << "  " << table.substr(from, nl + 1 - from);
    from = nl + 1;
  }
  os << "  " << v.line << "\n";  // one line, whatever the host names' length: the verdict to grep for
  return os.str();
}

namespace {

std::string verdict_json(const NodePairVerdict& v) {
  nlohmann::json np = nlohmann::json::object();
  np["threshold"] = v.threshold;
  np["samples"] = v.samples;
  nlohmann::json pairs = nlohmann::json::array();
  for (const auto& pr : v.pairs) {
    nlohmann::json q{{"round", pr.round}, {"node_a", pr.node_a}, {"node_b", pr.node_b}, {"host_a", pr.host_a},
                     {"host_b", pr.host_b}, {"slow", pr.slow}, {"confirmed", pr.confirmed}};
    if (std::isfinite(pr.gbps)) q["gbps"] = pr.gbps;  // absent rather than null
    if (std::isfinite(pr.share)) q["share_of_best"] = pr.share;
    if (std::isfinite(pr.alone_gbps)) {
      q["alone_gbps"] = pr.alone_gbps;
      q["alone_share_of_best"] = pr.alone_share;
      q["alone_samples"] = pr.alone_samples;
    }
    pairs.push_back(std::move(q));
  }
  np["pairs"] = pairs;
  if (!v.pairs.empty()) np["best_pair"] = v.best;
  np["slow_nodes"] = v.slow_nodes;
  np["rechecked"] = v.rechecked;
  np["verdict"] = v.line;
  return np.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// What the second look saw of a slow pair: "; again alone: 0.1 GB/s, 2% (3 runs)", or why it is not confirmed.
std::string alone_text(const NodePairVerdict& v, const NodePairRow& p) {
  if (!v.rechecked) return "; not run again alone (a file without the second look)";
  if (p.alone_samples == 0) {
    return "; not run again alone (the run does so below " + percent(kNodePairThreshold) +
           " of one more sweep's best): cannot confirm";
  }
  const std::string alone = format_sig3(p.alone_gbps) + " GB/s, " + percent(p.alone_share) + " (median of " +
                            std::to_string(p.alone_samples) + " run(s))";
  return p.confirmed ? "; again alone: " + alone : "; but alone " + alone + ": not slow by itself (others' traffic or noise)";
}

// What the sweep says of each link and node, for the verdict: a slow pair's link fails, and a node whose every pair
// is slow fails with its link named (the pairs' own findings then point at it, not at their other ends).
std::vector<Finding> node_pair_findings(const NodePairVerdict& v) {
  std::vector<Finding> out;
  const NodePairRow& best = v.pairs[v.best];
  const std::string of_best = " of the best pair (" + pair_name(best) + " " + format_sig3(best.gbps) + " GB/s; " +
                              "threshold " + percent(v.threshold) + ")";
  for (const auto& p : v.pairs) {
    if (!p.slow) continue;
    out.push_back({SubjectKind::link, p.host_a + "-" + p.host_b, -1, p.host_a, p.host_b,
                   p.confirmed ? Severity::fail : Severity::warn,
                   "node pair at " + format_sig3(p.gbps) + " GB/s, " + percent(p.share) + of_best + " in the median of " +
                       std::to_string(v.samples) + " sweep(s)" + alone_text(v, p)});
  }
  for (const auto& host : v.slow_nodes) {
    double lo = 1, hi = 0;
    bool confirmed = true;
    for (const auto& p : v.pairs) {
      if (p.host_a != host && p.host_b != host) continue;
      lo = std::min(lo, p.share);
      hi = std::max(hi, p.share);
      confirmed = confirmed && p.confirmed;
    }
    const std::string range = lo == hi ? percent(lo) : percent(lo) + "-" + percent(hi);
    out.push_back({SubjectKind::node, host, -1, "", "", confirmed ? Severity::fail : Severity::warn,
                   "its link is slow: every pair with it reaches only " + range + of_best +
                       (!v.rechecked ? "" : confirmed ? ", and again when each was run alone"
                                                      : "; not every one of them was slow again alone")});
  }
  return out;
}

// The sweep's rows: the verdict as a section after the table and as "node_pairs" in JSON; its phases are its
// rounds, shown there rather than as phases.
class NodePairAnalysis : public RowAnalysis {
 public:
  std::vector<ReportOption> options() const override { return {pair_threshold_option()}; }
  // The sweep is not one operation: GB/s over the sweep instead.
  bool times_one_operation(const CaseRecord& c) const override { return !is_sweep(c); }
  void row(const RunRecord&, const CaseRecord& c, const RowSettings& s, ReportRow& r) const override {
    if (!is_sweep(c)) return;
    r.phase_s.clear();
    const auto v = node_pair_verdict(c, s.value(pair_threshold_option()));
    if (!v) return;
    const std::string text = render_node_pairs(c.index + 1, r.params_label, *v);
    for (std::size_t from = 0; from < text.size();) {
      const std::size_t nl = text.find('\n', from);
      r.section_lines.push_back(text.substr(from, nl - from));
      from = nl == std::string::npos ? text.size() : nl + 1;
    }
    r.json.emplace_back("node_pairs", verdict_json(*v));
    if (std::isfinite(v->pairs[v->best].gbps)) {
      for (auto& f : node_pair_findings(*v)) r.findings.push_back(std::move(f));
    }
  }
};

}  // namespace

const ReportOption& pair_threshold_option() {
  static const ReportOption o{
      "--pair-threshold",
      "node-pairs cases: a pair below this share of the best pair's bandwidth is slow (default 0.93, as ClusterKit)",
      kNodePairThreshold,
      0.0,
      1.0,
      "SHARE",
      "a number above 0 and at most 1 (a share of the best node pair's bandwidth, e.g. 0.93)",
      "results/node-pairs.h5 --pair-threshold 0.9"};
  return o;
}

const RowAnalysis& node_pair_analysis() {
  static const NodePairAnalysis a;
  return a;
}

}  // namespace gpuscale
