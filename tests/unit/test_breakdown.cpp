// Where the time goes (report/breakdown.hpp) on cases with known timings: what each part is, how a slow rank
// becomes the others' wait, how compute hides transfer, serial turns, transfers and gemms without phases, ranks
// that sat the case out; and the table and JSON that show it.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <tuple>

#include "common/case_tables.hpp"
#include "report/breakdown.hpp"
#include "report/report.hpp"

using namespace gpuscale;

namespace {

// A rank's sample: it starts `offset` after the sample's start, lasts `span`, of which `busy` on the device.
struct Timing {
  double offset = 0, span = 0, busy = 0;
};

// A case whose rank r's every sample is timing[r]; samples 1 s apart (serial: each turn after the previous one's).
CaseRecord timed(const std::string& workload, const std::string& mode, const std::vector<Timing>& timing, int reps) {
  CaseRecord c;
  c.experiment = "x";
  c.workload = workload;
  c.mode = *parse_mode(mode);
  c.backend = Backend::cpu;
  c.status = CaseStatus::ok;
  c.ranks = static_cast<int>(timing.size());
  c.reps = reps;
  for (int r = 0; r < c.ranks; ++r) {
    for (int i = 0; i < reps; ++i) {
      const Timing& t = timing[static_cast<std::size_t>(r)];
      const double t0 = (mode == "serial" ? r * reps + i : i) + t.offset;
      c.wall_start_s.push_back(t0);
      c.wall_end_s.push_back(t0 + t.span);
      c.device_time_s.push_back(t.busy);
      c.enqueue_s.push_back(0.0);
    }
  }
  c.verify_error.assign(static_cast<std::size_t>(c.ranks), 0.0);
  return c;
}

// Intervals (phase 0 compute, 1 transfer; times after the sample's start) marked in every sample of every rank.
void add_phases(CaseRecord& c, const std::vector<std::tuple<int, double, double>>& intervals) {
  testing::PhaseRows rows;
  rows.names = {"compute", "transfer"};
  for (int r = 0; r < c.ranks; ++r) {
    for (int i = 0; i < c.reps; ++i) {
      const double t0 = c.wall_start_s[static_cast<std::size_t>(r * c.reps + i)];
      for (const auto& [phase, a, b] : intervals) rows.add(r, i, phase, t0 + a, t0 + b);
    }
  }
  c.tables.push_back(testing::phases_table_of(rows, c.ranks));
}

void check_parts(const Breakdown& b, double compute, double exposed, double overhead, double wait, double wire) {
  CHECK(b.compute_s == Approx(compute).margin(1e-9));
  CHECK(b.exposed_s == Approx(exposed).margin(1e-9));
  CHECK(b.overhead_s == Approx(overhead).margin(1e-9));
  CHECK(b.wait_s == Approx(wait).margin(1e-9));
  CHECK(b.wire_s == Approx(wire).margin(1e-9));
}

}  // namespace

TEST_CASE("in parallel a slow rank's extra time is the others' wait", "[breakdown]") {
  // Three ranks from one start: 100 ms, 100 ms and 160 ms; each busy 90 ms of it. The makespan is 160 ms; the
  // median rank took 100 ms (90 compute, 10 overhead) and waited 60 ms for the slowest.
  CaseRecord c = timed("gemm", "parallel", {{0, 0.10, 0.09}, {0, 0.10, 0.09}, {0, 0.16, 0.09}}, 5);
  const auto b = measured_breakdown(c);
  REQUIRE(b);
  CHECK(b->total_s == Approx(0.16));
  check_parts(*b, 0.09, 0, 0.01, 0.06, 0);
  CHECK(b->sum() == Approx(b->total_s));

  // Two ranks: the median is the faster one, whose wait for the slower (and for its later start) is the wait.
  c = timed("gemm", "parallel", {{0, 0.10, 0.08}, {0.01, 0.15, 0.15}}, 5);
  const auto two = measured_breakdown(c);
  REQUIRE(two);
  CHECK(two->total_s == Approx(0.16));
  check_parts(*two, 0.08, 0, 0.02, 0.06, 0);
}

TEST_CASE("transfer that compute hid is wire time, not exposed, compute on two lanes counts once", "[breakdown]") {
  // One rank, 110 ms: compute 0-50 and 50-80 ms, transfer 60-100 ms: 20 ms of it after the compute.
  CaseRecord c = timed("pipeline", "parallel", {{0, 0.11, 0.10}}, 3);
  add_phases(c, {{0, 0.0, 0.05}, {0, 0.05, 0.08}, {1, 0.06, 0.10}});
  auto b = measured_breakdown(c);
  REQUIRE(b);
  check_parts(*b, 0.08, 0.02, 0.01, 0, 0.04);
  CHECK(b->sum() == Approx(0.11));

  // Compute intervals that overlap each other (two lanes) count as the time they cover: 0-60 ms, not 80 ms.
  // The transfer 10-70 ms is hidden up to 60 ms: 10 ms exposed.
  c = timed("dp_step", "parallel", {{0, 0.08, 0.07}}, 3);
  c.scope = Scope::world;
  add_phases(c, {{0, 0.0, 0.05}, {0, 0.03, 0.06}, {1, 0.01, 0.07}});
  b = measured_breakdown(c);
  REQUIRE(b);
  check_parts(*b, 0.06, 0.01, 0.01, 0, 0.06);
}

TEST_CASE("serial turns: each part summed over the turns, no wait between them, the total the row's median",
          "[breakdown]") {
  // Device-local work: each rank its own turn, one after the other.
  CaseRecord c = timed("gemm", "serial", {{0, 0.10, 0.08}, {0, 0.20, 0.15}}, 5);
  auto b = measured_breakdown(c);
  REQUIRE(b);
  check_parts(*b, 0.23, 0, 0.07, 0, 0);
  CHECK(b->total_s == Approx(0.30));
  RunRecord run;
  run.cases = {c};
  const auto rows = build_report(run);
  REQUIRE(rows[0].breakdown);
  CHECK(rows[0].breakdown->total_s == rows[0].median_s);

  // Transfers in serial mode: a turn is a group, whose ranks run together; within it the median rank waits for
  // the group's slowest. Groups {0, 1} and {2, 3}.
  c = timed("collective", "serial", {{0, 0.10, 0.09}, {0, 0.12, 0.11}, {0, 0.20, 0.18}, {0, 0.30, 0.28}}, 5);
  c.scope = Scope::intra_node;
  c.turn = {0, 0, 1, 1};
  for (std::size_t k = 0; k < c.wall_start_s.size(); ++k) {  // ranks 1 and 3 with 0 and 2 (timed() staggers them)
    const double with_previous = (k / 5) % 2 == 1 ? 5.0 : 0.0;
    c.wall_start_s[k] -= with_previous;
    c.wall_end_s[k] -= with_previous;
  }
  b = measured_breakdown(c);
  REQUIRE(b);
  // Turn 0: median rank 0 (100 ms: 90 transfer, 10 overhead) waits 20 ms; turn 1: rank 2 (200 ms: 180 + 20) 100 ms.
  check_parts(*b, 0, 0.27, 0.03, 0.12, 0.27);
  CHECK(b->total_s == Approx(0.42));
  CHECK(b->sum() == Approx(b->total_s));
}

TEST_CASE("without phases a transfer's busy time is exposed transfer and wire, a gemm's is compute", "[breakdown]") {
  CaseRecord coll = timed("collective", "parallel", {{0, 0.05, 0.04}, {0, 0.05, 0.04}}, 4);
  coll.scope = Scope::world;
  auto b = measured_breakdown(coll);
  REQUIRE(b);
  check_parts(*b, 0, 0.04, 0.01, 0, 0.04);

  // The node-pair sweep marks phases of its own ("round 1", ...), none compute or transfer: still a transfer.
  testing::PhaseRows rounds;
  rounds.names = {"round 1"};
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < 4; ++i) rounds.add(r, i, 0, coll.wall_start_s[r * 4 + i], coll.wall_end_s[r * 4 + i]);
  }
  coll.scope = Scope::node_pairs;
  coll.tables = {testing::phases_table_of(rounds, 2)};
  b = measured_breakdown(coll);
  REQUIRE(b);
  check_parts(*b, 0, 0.04, 0.01, 0, 0.04);

  CaseRecord gemm = timed("gemm", "parallel", {{0, 0.05, 0.045}, {0, 0.05, 0.045}}, 4);
  b = measured_breakdown(gemm);
  REQUIRE(b);
  check_parts(*b, 0.045, 0, 0.005, 0, 0);
}

TEST_CASE("ranks that sat the case out are left out of the median rank, not of the makespan", "[breakdown]") {
  // distributed_gemm with group_size 3 on 4 ranks: rank 3 did nothing (a microsecond). Of ranks 0-2 (100, 120,
  // 150 ms) the median is rank 1; counting rank 3 it would be rank 0.
  CaseRecord c = timed("distributed_gemm", "parallel",
                       {{0, 0.10, 0.10}, {0, 0.12, 0.12}, {0, 0.15, 0.15}, {0, 1e-6, 1e-6}}, 5);
  c.scope = Scope::world;
  c.group = {0, 0, 0, -1};
  const auto b = measured_breakdown(c);
  REQUIRE(b);
  check_parts(*b, 0, 0.12, 0, 0.03, 0.12);  // no phases: a transfer workload's busy time

  // A rank outside the group that starts early lengthens the makespan like the report's: that time is waited.
  for (std::size_t k = 15; k < 20; ++k) c.wall_start_s[k] -= 0.01;
  const auto early = measured_breakdown(c);
  REQUIRE(early);
  CHECK(early->total_s == Approx(0.16));
  CHECK(early->wait_s == Approx(0.04));
}

TEST_CASE("each part is its median over samples, so the parts add up to the median only about", "[breakdown]") {
  // One rank, three samples: 100 ms (compute 90), 160 ms (compute 80), 80 ms (compute 10). Per sample the parts
  // add up; their medians, compute 80 and overhead 70 ms, add up to 150 ms, against a median sample of 100 ms.
  CaseRecord c = timed("gemm", "parallel", {{0, 0.10, 0}}, 3);
  c.device_time_s = {0.09, 0.08, 0.01};
  c.wall_end_s = {c.wall_start_s[0] + 0.10, c.wall_start_s[1] + 0.16, c.wall_start_s[2] + 0.08};
  const auto b = measured_breakdown(c);
  REQUIRE(b);
  CHECK(b->total_s == Approx(0.10));
  check_parts(*b, 0.08, 0, 0.07, 0, 0);
  CHECK(b->sum() == Approx(0.15));
}

TEST_CASE("a skipped case has no breakdown: none in its row, its JSON or its CSV cells", "[breakdown]") {
  CaseRecord skipped;
  skipped.index = 1;
  skipped.experiment = "x";
  skipped.workload = "gemm";
  skipped.mode = Mode::parallel;
  skipped.status = CaseStatus::skipped;
  skipped.status_reason = "needs 2 nodes";
  CHECK_FALSE(measured_breakdown(skipped));
  RunRecord run;
  run.cases = {timed("gemm", "parallel", {{0, 0.10, 0.09}}, 3), skipped};
  const auto rows = build_report(run);
  REQUIRE(rows[0].breakdown);
  CHECK_FALSE(rows[1].breakdown);
  const auto json = nlohmann::json::parse(render_json(rows));
  CHECK(json[0]["breakdown"]["compute_s"] == Approx(0.09));
  CHECK_FALSE(json[1].contains("breakdown"));
  const std::string csv = render_csv(rows);
  CHECK(csv.find("breakdown.compute_s,breakdown.exposed_transfer_s,breakdown.overhead_s,breakdown.wait_s,"
                 "breakdown.wire_s,breakdown.sum_s") != std::string::npos);
}

TEST_CASE("breakdown JSON: the documented keys, numbers as numbers, the sum beside the total", "[breakdown]") {
  Breakdown b;
  b.total_s = 1.0;
  b.compute_s = 0.5;
  b.exposed_s = 0.2;
  b.overhead_s = 0.1;
  b.wait_s = 0.15;
  b.wire_s = 0.4;
  const auto j = nlohmann::json::parse(breakdown_json(b));
  CHECK(j.size() == 7);
  CHECK(j["total_s"] == 1.0);
  CHECK(j["compute_s"] == 0.5);
  CHECK(j["exposed_transfer_s"] == 0.2);
  CHECK(j["overhead_s"] == 0.1);
  CHECK(j["wait_s"] == 0.15);
  CHECK(j["wire_s"] == 0.4);
  CHECK(j["sum_s"] == Approx(0.95));
}

TEST_CASE("the breakdown table fits 80 columns: each part, how near they add up, labels on their own line when long",
          "[breakdown]") {
  Breakdown b;
  b.total_s = 0.2;
  b.compute_s = 0.1;
  b.exposed_s = 0.05;
  b.overhead_s = 0.01;
  b.wait_s = 0.02;
  b.wire_s = 0.08;
  const std::string text = render_breakdown({{"#1 [parallel]", b}, {"#2 [serial]", b}});
  CHECK(fits_terminal(text));
  CHECK(text.find("median  compute  exposed  overhead     wait     wire  adds up") != std::string::npos);
  CHECK(text.find("#1 [parallel]  200 ms   100 ms  50.0 ms   10.0 ms  20.0 ms  80.0 ms      90%") !=
        std::string::npos);
  CHECK(text.find("wait: for the slowest") != std::string::npos);
  const std::string label = "#12 bucket_bytes=26214400 overlap=true scope=intra-node [parallel]";
  const std::string narrow = render_breakdown({{label, b}});
  CHECK(fits_terminal(narrow));
  CHECK(narrow.find(label + "\n  200 ms   100 ms") != std::string::npos);
}

TEST_CASE("report --breakdown: the run, a block per experiment, a line per case that ran, the skipped named",
          "[breakdown]") {
  RunRecord run;
  run.backend = Backend::cpu;
  run.ranks.resize(2);
  CaseRecord a = timed("gemm", "serial", {{0, 0.10, 0.09}, {0, 0.10, 0.09}}, 3);
  CaseRecord p = timed("gemm", "parallel", {{0, 0.10, 0.09}, {0, 0.10, 0.09}}, 3);
  p.index = 1;
  CaseRecord skipped;
  skipped.index = 2;
  skipped.experiment = "y";
  skipped.workload = "collective";
  skipped.mode = Mode::parallel;
  skipped.status = CaseStatus::skipped;
  run.cases = {a, p, skipped};
  const std::string text = render_breakdown_report("f.h5", run, build_report(run));
  CHECK(fits_terminal(text));
  CHECK(text.rfind("f.h5: where the time goes, 2 rank(s) on 1 node(s), backend cpu\n", 0) == 0);
  CHECK(text.find("x: gemm\n") != std::string::npos);
  CHECK(text.find("#1 [serial]    200 ms   180 ms") != std::string::npos);
  CHECK(text.find("#2 [parallel]  100 ms  90.0 ms") != std::string::npos);
  CHECK(text.find("not run (skipped): case(s) 3\n") != std::string::npos);
}
