// The node-pair sweep without MPI: the round-robin schedule, the check-time
// refusal of other ops, the plan, the pairs table in the file, and the
// report's answer to "which node's link is slow".
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <map>
#include <set>

#include "comm/groups.hpp"
#include "common/case_tables.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "core/plan.hpp"
#include "io/result_reader.hpp"
#include "io/result_writer.hpp"
#include "report/analysis.hpp"
#include "report/report.hpp"
#include "workloads/collective.hpp"
#include "workloads/collective_pattern.hpp"
#include "workloads/node_pair_recheck.hpp"
#include "workloads/node_pair_table.hpp"
#include "workloads/node_pairs.hpp"
#include "workloads/workload.hpp"

using namespace gpuscale;

namespace {

constexpr double kBytes = 1 << 20;
constexpr int kIters = 2;

std::string host(int node) { return "node" + std::to_string(node); }

// A node-pairs case as the runner records it: `nodes` nodes with `per_node`
// ranks each (local rank 0 of each in the group), `reps` sweeps, pair (a, b)
// exchanging at gbps(a, b) GB/s; the second end of each pair finishes a
// little earlier, so the pair's time is its first end's. Its tables: the
// phases (one per round) and the pairs, the sweep's schedule made as the
// runner makes it, checked against the pairs the phases were made for.
CaseRecord sweep_case(int nodes, int per_node, int reps, const std::function<double(int, int)>& gbps) {
  CaseRecord c;
  c.index = 3;
  c.experiment = "np";
  c.workload = "collective";
  c.mode = Mode::parallel;
  c.backend = Backend::cpu;
  c.status = CaseStatus::ok;
  c.ranks = nodes * per_node;
  c.nodes = nodes;
  c.reps = reps;
  c.params.set("op", std::string("pairs"));
  c.params.set("bytes", static_cast<std::int64_t>(kBytes));
  c.params.set("iters", std::int64_t{kIters});
  c.params.set("scope", std::string("node-pairs"));
  c.scope = Scope::node_pairs;
  c.comm = CommKind::mpi;
  c.groups = 1;
  const int rounds = node_pair_rounds(nodes);
  testing::PhaseRows phases;
  for (int round = 0; round < rounds; ++round) phases.names.push_back("round " + std::to_string(round + 1));
  for (int r = 0; r < c.ranks; ++r) {
    const bool in = r % per_node == 0;
    c.group.push_back(in ? 0 : -1);
    c.group_rank.push_back(in ? r / per_node : -1);
    c.group_size.push_back(in ? nodes : 0);
    c.op_bytes.push_back(in ? kBytes : 0.0);
    c.bus_factor.push_back(1.0);
    c.wrong_elements.push_back(0);
    c.verify_error.push_back(0.0);
    c.turn.push_back(0);
  }
  std::vector<double> sweep(static_cast<std::size_t>(c.ranks), 0.0);
  std::vector<std::int64_t> round_of, node_a, node_b, rank_a, rank_b;  // the pairs, by round
  std::vector<std::string> host_a, host_b;
  for (int round = 0; round < rounds; ++round) {
    for (int a = 0; a < nodes; ++a) {
      const int b = node_pair_partner(a, round, nodes);
      if (b <= a) continue;
      round_of.push_back(round + 1);
      node_a.push_back(a);
      node_b.push_back(b);
      rank_a.push_back(a * per_node);
      rank_b.push_back(b * per_node);
      host_a.push_back(host(a));
      host_b.push_back(host(b));
      const double t = kBytes * kIters / (gbps(a, b) * 1e9);
      for (int s = 0; s < reps; ++s) {
        for (const auto& [node, took] : {std::pair{a, t}, std::pair{b, 0.9 * t}}) {
          phases.add(node * per_node, s, round, 100.0 * s + round, 100.0 * s + round + took);
        }
      }
      sweep[a * per_node] += t;
      sweep[b * per_node] += t;
    }
  }
  for (int r = 0; r < c.ranks; ++r) {
    for (int s = 0; s < reps; ++s) {
      c.device_time_s.push_back(sweep[r]);
      c.enqueue_s.push_back(1e-5);
      c.wall_start_s.push_back(100.0 * s);
      c.wall_end_s.push_back(100.0 * s + sweep[r]);
    }
  }
  c.bytes_per_sample = kBytes * kIters * (nodes - 1);
  const CaseTable pairs = testing::pairs_table_of(nodes, per_node, host);
  const auto col = columns_of(pairs, {{"round", ColumnType::integer},
                                      {"node_a", ColumnType::integer},
                                      {"node_b", ColumnType::integer},
                                      {"rank_a", ColumnType::integer},
                                      {"rank_b", ColumnType::integer},
                                      {"host_a", ColumnType::text},
                                      {"host_b", ColumnType::text}});
  REQUIRE(col.size() == 7);
  CHECK(col[0]->ints == round_of);
  CHECK(col[1]->ints == node_a);
  CHECK(col[2]->ints == node_b);
  CHECK(col[3]->ints == rank_a);
  CHECK(col[4]->ints == rank_b);
  CHECK(col[5]->texts == host_a);
  CHECK(col[6]->texts == host_b);
  c.tables = {testing::phases_table_of(phases, c.ranks), pairs};
  return c;
}

NodePairRow pair(int a, int b, double gbps) { return {1, a, b, host(a), host(b), gbps}; }

// The second look of case `c` as the ranks' rows gathered (rank first): each pair at `alone(a, b)` GB/s by itself
// in 3 runs, or not run again where that is 0.
CaseTable rechecks_of(const CaseRecord& c, const std::function<double(int, int)>& alone) {
  const CaseTable* pairs = find_table(c.tables, kPairsTable);
  const auto col = columns_of(*pairs, {{"round", ColumnType::integer}, {"node_a", ColumnType::integer},
                                       {"node_b", ColumnType::integer}, {"rank_a", ColumnType::integer},
                                       {"rank_b", ColumnType::integer}});
  CaseTable t;
  t.name = kRechecksTable;
  t.columns = {int_column("rank", "world rank"), int_column("round", ""), real_column("sweep_seconds", "s", ""),
               real_column("alone_seconds", "s", ""), int_column("alone_samples", "")};
  for (std::size_t i = 0; i < pairs->rows(); ++i) {
    const double gbps = alone(static_cast<int>(col[1]->ints[i]), static_cast<int>(col[2]->ints[i]));
    for (const auto rank : {col[3]->ints[i], col[4]->ints[i]}) {
      t.columns[0].ints.push_back(rank);
      t.columns[1].ints.push_back(col[0]->ints[i]);
      t.columns[2].reals.push_back(1.0);
      t.columns[3].reals.push_back(gbps > 0 ? kBytes * kIters / (gbps * 1e9) : NAN);
      t.columns[4].ints.push_back(gbps > 0 ? 3 : 0);
    }
  }
  return t;
}

Params sweep_params(const std::string& op) {
  Params p;
  p.set("op", op);
  p.set("dtype", std::string("fp32"));
  p.set("bytes", std::int64_t{4096});
  p.set("inplace", false);
  p.set("iters", std::int64_t{1});
  p.set("scope", std::string("node-pairs"));
  return p;
}

}  // namespace

TEST_CASE("the sweep meets every pair of nodes exactly once, in rounds of disjoint pairs", "[node-pairs]") {
  for (int n = 2; n <= 17; ++n) {
    INFO("n = " << n);
    const int rounds = node_pair_rounds(n);
    CHECK(rounds == (n % 2 == 0 ? n - 1 : n));  // ClusterKit's n - 1 rounds; odd n: one more, each node rests once
    std::set<std::pair<int, int>> met;
    std::vector<int> rested(n, 0);
    for (int round = 0; round < rounds; ++round) {
      std::set<int> busy;
      for (int a = 0; a < n; ++a) {
        const int b = node_pair_partner(a, round, n);
        if (b < 0) {
          ++rested[a];
          continue;
        }
        REQUIRE(b < n);
        CHECK(b != a);
        CHECK(node_pair_partner(b, round, n) == a);  // both ends agree
        CHECK(busy.insert(a).second);                 // disjoint: no node twice in a round
        if (a < b) CHECK(met.insert({a, b}).second);  // no pair twice
      }
      CHECK(static_cast<int>(busy.size()) == (n % 2 == 0 ? n : n - 1));
    }
    CHECK(static_cast<int>(met.size()) == n * (n - 1) / 2);  // every pair
    for (int a = 0; a < n; ++a) CHECK(rested[a] == (n % 2 == 0 ? 0 : 1));
  }
  CHECK(node_pair_rounds(1) == 0);
  CHECK(node_pair_partner(0, 0, 1) == -1);
  CHECK(node_pair_partner(0, 3, 4) == -1);  // past the last round
}

TEST_CASE("each round's data is checked against the partner that sent it", "[node-pairs]") {
  const CollShape s = coll_shape(CollOp::pairs, 4104, DType::fp32, 4);
  auto got = coll_send_data(CollOp::pairs, DType::fp32, 2, 4, s);  // what node 2 sent
  CHECK(wrong_elements_from(DType::fp32, 2, 4, s, got.data()) == 0);
  CHECK(wrong_elements_from(DType::fp32, 1, 4, s, got.data()) > 0);  // not from node 1
  float v = 0;
  std::memcpy(&v, got.data() + 4 * 7, 4);
  v += 1;
  std::memcpy(got.data() + 4 * 7, &v, 4);
  CHECK(wrong_elements_from(DType::fp32, 2, 4, s, got.data()) == 1);
}

TEST_CASE("scope node-pairs is op pairs only, refused at check time naming the case", "[node-pairs][errors]") {
  CHECK(parse_scope("node-pairs") == Scope::node_pairs);
  CHECK(std::string(scope_name(Scope::node_pairs)) == "node-pairs");
  CHECK(scope_group_index(Scope::node_pairs, 3, 0) == 0);
  CHECK(scope_group_index(Scope::node_pairs, 3, 1) == -1);  // only local rank 0 of each node
  // The general scopes, which dp_step offers too, do not include it.
  const auto& general = scope_names();
  CHECK(std::find(general.begin(), general.end(), "node-pairs") == general.end());

  CHECK(collective_type().unsupported(sweep_params("pairs"), {Backend::cpu, CommKind::mpi}).empty());
  CHECK_THROWS_WITH(collective_type().unsupported(sweep_params("allreduce"), {Backend::cpu, CommKind::mpi}),
                    "scope node-pairs runs op pairs only (every node exchanges with every other node, a pair at a "
                    "time); got op 'allreduce'");
  const std::string toml = R"([[experiment]]
name = "np"
workload = "collective"
op = ["pairs", "sendrecv"]
scope = "node-pairs"
)";
  auto plan = expand(parse_config(toml, "np.toml", {}, workload_schemas()));
  drop_single_turn_serials(plan);
  CHECK_THROWS_WITH(check_plan_runs_on(plan, {Backend::cpu, CommKind::mpi}),
                    "case 2 of 2 (np op=sendrecv dtype=fp32 bytes=1048576 inplace=false iters=1 scope=node-pairs "
                    "[parallel]): scope node-pairs runs op pairs only (every node exchanges with every other node, a "
                    "pair at a time); got op 'sendrecv'");
  CHECK_THROWS_AS(check_plan_runs_on(plan, {Backend::cpu, CommKind::mpi}), InputError);
}

TEST_CASE("a sweep is one group: it runs once, as parallel", "[node-pairs][plan]") {
  const std::string toml = R"([[experiment]]
name = "np"
workload = "collective"
op = "pairs"
scope = "node-pairs"
)";
  auto plan = expand(parse_config(toml, "np.toml", {}, workload_schemas()));
  REQUIRE(plan.size() == 2);
  drop_single_turn_serials(plan);
  REQUIRE(plan.size() == 1);
  CHECK(plan[0].mode == Mode::parallel);
}

TEST_CASE("the pairs table round-trips through the file", "[node-pairs][hdf5]") {
  namespace fs = std::filesystem;
  const std::string path =
      (fs::temp_directory_path() / ("gpuscale-test-" + std::to_string(getpid()) + "-pairs.h5")).string();
  fs::remove(path);
  RunRecord run;
  run.software_version = "0.1.0+gtest";
  run.nodes = 4;
  for (int r = 0; r < 8; ++r) {
    RankRecord rr;
    rr.hostname = host(r / 2);
    rr.node_index = r / 2;
    rr.local_rank = r % 2;
    rr.local_size = 2;
    rr.device_kind = "cpu";
    run.ranks.push_back(rr);
  }
  const CaseRecord c = sweep_case(4, 2, 3, [](int, int) { return 1.0; });
  {
    ResultWriter w(path, run);
    w.write_case(c);
    w.finish(true, "complete", run.ranks);
  }
  const RunRecord back = read_result_file(path);
  REQUIRE(back.cases.size() == 1);
  const CaseTable& p = testing::table_of(back.cases[0], kPairsTable);
  REQUIRE(p.rows() == 6);
  testing::check_same_table(p, testing::table_of(c, kPairsTable));  // round, node_a, node_b, rank_a, rank_b, hosts
  CHECK(back.cases[0].scope == Scope::node_pairs);
  const CaseTable& phases = testing::table_of(back.cases[0], kPhasesTable);
  CHECK(testing::phase_rows(phases).names == testing::phase_rows(c).names);
  testing::check_same_table(phases, testing::table_of(c, kPhasesTable));
  fs::remove(path);
}

TEST_CASE("the node whose every pair is below the threshold is named, and noise elsewhere listed",
          "[node-pairs][report]") {
  SECTION("one slow node") {
    // 4 nodes, node 3's link at a tenth: its pairs at 10-11% of the best.
    const auto v = judge_node_pairs(
        {pair(0, 3, 0.10), pair(1, 2, 1.00), pair(0, 2, 0.98), pair(1, 3, 0.11), pair(0, 1, 0.99), pair(2, 3, 0.10)},
        kNodePairThreshold);
    CHECK(v.best == 1);
    CHECK(v.slow_nodes == std::vector<std::string>{"node3"});
    CHECK(v.line == "node node3's link is slow: pairs with it reach 10%–11% of the best pair (threshold 93%)");
    CHECK(v.pairs[0].slow);
    CHECK_FALSE(v.pairs[2].slow);
    CHECK(v.pairs[3].share == Approx(0.11));
  }
  SECTION("one slow node and an unrelated slow pair") {
    const auto v = judge_node_pairs(
        {pair(0, 3, 0.10), pair(1, 2, 1.00), pair(0, 2, 0.98), pair(1, 3, 0.10), pair(0, 1, 0.80), pair(2, 3, 0.10)},
        kNodePairThreshold);
    CHECK(v.slow_nodes == std::vector<std::string>{"node3"});
    CHECK(v.line == "node node3's link is slow: pairs with it reach 10% of the best pair (threshold 93%); also "
                    "below the threshold: node0 - node1 (80%)");
  }
  SECTION("no slow pair") {
    const auto v = judge_node_pairs({pair(0, 1, 1.0), pair(0, 2, 0.95), pair(1, 2, 0.97)}, kNodePairThreshold);
    CHECK(v.slow_nodes.empty());
    CHECK(v.line == "no slow link: every pair reaches at least 93% of the best pair (the slowest, node0 - node2, 95%)");
  }
  SECTION("one slow pair: both of its nodes are fine with the others, so no node is named") {
    const auto v = judge_node_pairs({pair(0, 1, 0.5), pair(0, 2, 1.0), pair(1, 2, 0.99)}, kNodePairThreshold);
    CHECK(v.slow_nodes.empty());
    CHECK(v.line == "1 pair(s) below 93% of the best pair, and no node with all of its pairs below: node0 - node1 "
                    "(50%)");
  }
  SECTION("two slow nodes") {
    // 4 nodes, nodes 2 and 3 slow: only pair 0-1 is fast.
    const auto v = judge_node_pairs(
        {pair(0, 3, 0.1), pair(1, 2, 0.1), pair(0, 2, 0.1), pair(1, 3, 0.1), pair(0, 1, 1.0), pair(2, 3, 0.05)},
        kNodePairThreshold);
    CHECK(v.slow_nodes == std::vector<std::string>{"node2", "node3"});
    CHECK(v.line == "nodes node2 and node3 have slow links: pairs with them reach 5%–10% of the best pair (threshold "
                    "93%)");
  }
  SECTION("the threshold decides") {
    const std::vector<NodePairRow> pairs{pair(0, 1, 1.0), pair(0, 2, 0.6), pair(1, 2, 0.55)};
    CHECK(judge_node_pairs(pairs, 0.93).slow_nodes == std::vector<std::string>{"node2"});
    CHECK(judge_node_pairs(pairs, 0.5).slow_nodes.empty());
    CHECK(judge_node_pairs(pairs, 0.5).line.rfind("no slow link: every pair reaches at least 50%", 0) == 0);
  }
  SECTION("two nodes: one pair, the best") {
    const auto v = judge_node_pairs({pair(0, 1, 0.3)}, kNodePairThreshold);
    CHECK(v.slow_nodes.empty());
    CHECK_FALSE(v.pairs[0].slow);
  }
}

TEST_CASE("report: each pair's bandwidth from its round, the slow node in the table and in json",
          "[node-pairs][report]") {
  // 4 nodes of 2 ranks; node 2's link at a quarter of the others'.
  RunRecord run;
  run.nodes = 4;
  run.complete = true;
  run.cases = {sweep_case(4, 2, 5, [](int a, int b) { return a == 2 || b == 2 ? 0.25 : 1.0; })};
  const auto rows = build_report(run);
  REQUIRE(rows.size() == 1);
  const ReportRow& r = rows[0];
  // The verdict the report shows (its section and its JSON below), from the case's tables.
  const auto verdict = node_pair_verdict(run.cases[0], kNodePairThreshold);
  REQUIRE(verdict);
  const NodePairVerdict& v = *verdict;
  REQUIRE(v.pairs.size() == 6);
  CHECK(v.samples == 5);
  for (const auto& p : v.pairs) {
    const bool slow = p.node_a == 2 || p.node_b == 2;
    INFO(p.host_a << " - " << p.host_b);
    CHECK(p.gbps == Approx(slow ? 0.25 : 1.0));  // bytes x iters / the slower end's time
    CHECK(p.slow == slow);
  }
  CHECK(v.slow_nodes == std::vector<std::string>{"node2"});
  // The sweep is not one operation: no algbw/busbw, but GB/s of a node over the sweep.
  CHECK_FALSE(r.busbw_gbps);
  REQUIRE(r.gbps);
  CHECK(r.phase_s.empty());  // its phases are its rounds, shown per pair instead
  CHECK(r.slowest_rank % 2 == 0);  // ranks outside the group (odd ranks here) are left out

  // The row's section: the table's, line by line.
  REQUIRE_FALSE(r.section_lines.empty());
  CHECK(r.section_lines.front() == "node pairs, case 4: 4 nodes, 6 pairs in 3 round(s)");
  CHECK(r.section_lines.back() == "  " + v.line);
  std::string section;
  for (const auto& line : r.section_lines) section += line + "\n";
  CHECK(section == render_node_pairs(4, r.params_label, v));

  const std::string table = render_table("np.h5", run, rows);
  CHECK(table.find(section) != std::string::npos);
  CHECK(table.find("node pairs, case 4: 4 nodes, 6 pairs in 3 round(s)\n  (") != std::string::npos);
  CHECK(table.find("4 nodes, 6 pairs in 3 round(s)") != std::string::npos);
  CHECK(table.find("node node2's link is slow: pairs with it reach 25% of the best pair (threshold 93%)") !=
        std::string::npos);

  const auto j = nlohmann::json::parse(render_json(rows));
  const auto& np = j[0]["node_pairs"];
  CHECK(np["threshold"] == Approx(0.93));
  CHECK(np["slow_nodes"] == nlohmann::json::array({"node2"}));
  CHECK(np["pairs"].size() == 6);
  CHECK(np["pairs"][0]["gbps"].is_number());
  CHECK(np["pairs"][0]["host_a"].is_string());
  CHECK(np["verdict"] == v.line);

  // A lower threshold keeps node 2 above it.
  RowSettings low;
  low.options[pair_threshold_option().flag] = 0.2;
  const auto lenient = build_report(run, low);
  const auto lj = nlohmann::json::parse(render_json(lenient));
  CHECK(lj[0]["node_pairs"]["threshold"] == Approx(0.2));
  CHECK(lj[0]["node_pairs"]["slow_nodes"].empty());
  CHECK(node_pair_verdict(run.cases[0], 0.2)->slow_nodes.empty());
}

TEST_CASE("the second look: a slow pair fails only where it was slow again alone, and says how often it was seen",
          "[node-pairs][report]") {
  // 4 nodes of 1 rank; node 2's link at a quarter of the others' in the sweep.
  RunRecord run;
  run.nodes = 4;
  run.complete = true;
  run.cases = {sweep_case(4, 1, 5, [](int a, int b) { return a == 2 || b == 2 ? 0.25 : 1.0; })};
  const auto severities = [&](const std::vector<ReportRow>& rows) {
    std::map<std::string, Severity> out;
    for (const auto& f : rows[0].findings) out[f.subject] = f.severity;
    return out;
  };
  const auto reasons_of = [](const ReportRow& row) {  // each finding's reason, a line each
    std::string out;
    for (const auto& f : row.findings) out += f.reason + "\n";
    return out;
  };
  SECTION("slow again alone: each of its links fails, and the node") {
    run.cases[0].tables.push_back(rechecks_of(run.cases[0], [](int a, int b) { return a == 2 || b == 2 ? 0.2 : 0; }));
    const auto v = node_pair_verdict(run.cases[0], kNodePairThreshold);
    REQUIRE(v);
    CHECK(v->rechecked);
    for (const auto& p : v->pairs) {
      INFO(p.host_a << " - " << p.host_b);
      CHECK(p.confirmed == p.slow);
      CHECK(p.alone_samples == (p.slow ? 3 : 0));
      if (p.slow) CHECK(p.alone_share == Approx(0.2));
    }
    CHECK(v->line == "node node2's link is slow: pairs with it reach 25% of the best pair (threshold 93%); run again "
                     "alone, 3 of 3 slow pair(s) were slow again");
    const auto rows = build_report(run);
    const auto s = severities(rows);
    CHECK(s.at("node2") == Severity::fail);
    CHECK(s.at("node0-node2") == Severity::fail);
    const std::string reasons = reasons_of(rows[0]);
    CHECK_THAT(reasons, Catch::Contains("in the median of 5 sweep(s); again alone: 0.200 GB/s, 20% (median of 3 run(s))"));
    CHECK_THAT(reasons, Catch::Contains(", and again when each was run alone"));
    CHECK_THAT(render_node_pairs(1, "", *v), Catch::Contains("below 93%\n"));
  }
  SECTION("fast alone: the sweep's slowness only warns, and the node is not failed") {
    run.cases[0].tables.push_back(rechecks_of(run.cases[0], [](int a, int b) {
      return a == 2 && b == 3 ? 0.2 : a == 2 || b == 2 ? 1.0 : 0;
    }));
    const auto v = node_pair_verdict(run.cases[0], kNodePairThreshold);
    REQUIRE(v);
    CHECK(v->slow_nodes == std::vector<std::string>{"node2"});
    CHECK_THAT(v->line, Catch::EndsWith("; run again alone, 1 of 3 slow pair(s) was slow again"));
    const auto rows = build_report(run);
    const auto s = severities(rows);
    CHECK(s.at("node2") == Severity::warn);
    CHECK(s.at("node0-node2") == Severity::warn);
    CHECK(s.at("node2-node3") == Severity::fail);
    const std::string reasons = reasons_of(rows[0]);
    CHECK_THAT(reasons, Catch::Contains("; but alone 1.00 GB/s, 100% (median of 3 run(s)): not slow by itself"));
    CHECK_THAT(reasons, Catch::Contains("; not every one of them was slow again alone"));
    CHECK_THAT(render_node_pairs(1, "", *v), Catch::Contains("below 93%, not alone"));
  }
  SECTION("slow in the report but not run again: cannot confirm") {
    run.cases[0].tables.push_back(rechecks_of(run.cases[0], [](int, int) { return 0.0; }));
    const auto rows = build_report(run);
    CHECK(severities(rows).at("node2") == Severity::warn);
    CHECK_THAT(rows[0].findings[0].reason, Catch::Contains("; not run again alone (the run does so below 93% of one "
                                                           "more sweep's best): cannot confirm"));
  }
  SECTION("a file without the second look fails as the sweep alone says, and says so") {
    const auto rows = build_report(run);
    CHECK(severities(rows).at("node2") == Severity::fail);
    CHECK_THAT(rows[0].findings[0].reason, Catch::Contains("; not run again alone (a file without the second look)"));
  }
}

TEST_CASE("report: the collective declares --pair-threshold, which rows read as set or by its default",
          "[node-pairs][report]") {
  const RowAnalysis* a = analysis_of("collective");
  REQUIRE(a);
  const auto options = a->options();
  REQUIRE(options.size() == 1);
  const ReportOption& o = options[0];
  CHECK(o.flag == "--pair-threshold");
  CHECK(o.default_value == kNodePairThreshold);
  CHECK(o.accepts(1.0));
  CHECK(o.accepts(0.01));
  for (double bad : {0.0, -0.2, 1.5, std::nan(""), HUGE_VAL}) CHECK_FALSE(o.accepts(bad));
  RowSettings s;
  CHECK(s.value(o) == kNodePairThreshold);
  s.options[o.flag] = 0.5;
  CHECK(s.value(o) == 0.5);
  // The sweep is not one operation; the collective's other scopes are.
  CaseRecord c;
  c.scope = Scope::node_pairs;
  CHECK_FALSE(a->times_one_operation(c));
  c.scope = Scope::world;
  CHECK(a->times_one_operation(c));
}
