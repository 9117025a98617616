// The cost model: its least squares, the steps of each op, fits to files with
// known timings (the terms come back), predictions on other job shapes, the
// model file, and what it refuses.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/plan.hpp"
#include "model/fit.hpp"
#include "model/least_squares.hpp"
#include "model/model_file.hpp"
#include "model/predict_report.hpp"
#include "workloads/workload.hpp"

using namespace gpuscale;

namespace {

std::vector<Case> plan_of(const std::string& toml) {
  return expand(parse_config(toml, "m.toml", {}, workload_schemas()));
}

// A run of `ranks` ranks on `nodes` nodes (of `cores` cores each) with no case yet.
RunRecord run_of(int ranks, int nodes, int cores = 8) {
  RunRecord run;
  run.backend = Backend::cpu;
  run.comm = CommKind::mpi;
  run.nodes = nodes;
  run.complete = true;
  for (int r = 0; r < ranks; ++r) {
    RankRecord k;
    k.node_index = r * nodes / ranks;
    k.node_cores = cores;
    k.device_name = "test cpu";
    run.ranks.push_back(k);
  }
  return run;
}

// A case of `c` that took `each` seconds of device time per sample on every rank (and a microsecond more of wall).
CaseRecord case_of(const Case& c, const RunRecord& run, double each, int reps = 5) {
  CaseRecord r;
  r.index = c.index;
  r.experiment = c.experiment;
  r.workload = c.workload;
  r.mode = c.mode;
  r.backend = run.backend;
  r.comm = run.comm;
  r.status = CaseStatus::ok;
  r.ranks = static_cast<int>(run.ranks.size());
  r.nodes = run.nodes;
  r.reps = reps;
  r.params = c.params;
  if (c.params.has("scope")) {  // a transfer: what the report needs for its op time
    r.scope = parse_scope(c.params.get_string("scope"));
    r.op_bytes.assign(static_cast<std::size_t>(r.ranks), static_cast<double>(c.params.get_int("bytes")));
    r.bus_factor.assign(static_cast<std::size_t>(r.ranks), 1.0);
  }
  for (int k = 0; k < r.ranks; ++k) {
    for (int i = 0; i < reps; ++i) {
      const double t0 = c.mode == Mode::serial ? (k * reps + i) * 10.0 : i * 10.0;
      r.device_time_s.push_back(each);
      r.enqueue_s.push_back(0);
      r.wall_start_s.push_back(t0);
      r.wall_end_s.push_back(t0 + each + 1e-6);
    }
  }
  return r;
}

const double kAlpha = 50e-6, kSecPerByte = 2e-8;  // 50 us per step, 50 MB/s

// Allreduce on n ranks, one per node, at the model's own equation.
double allreduce_s(double bytes, int n, int nodes) {
  return ring_steps("allreduce", n) * kAlpha + bytes * 2.0 * (n - 1) / n * kSecPerByte * (nodes > 1 ? 1 : 0.1);
}

const std::string kCollectives = "[[experiment]]\nname = \"ar\"\nworkload = \"collective\"\nop = \"allreduce\"\n"
                                 "bytes = [65536, 1048576, 4194304]\nmodes = [\"parallel\"]\n";

// A file of the allreduce sweep on `ranks` ranks on `nodes` nodes, timed by allreduce_s.
std::pair<std::string, RunRecord> allreduce_file(int ranks, int nodes) {
  RunRecord run = run_of(ranks, nodes);
  for (const auto& c : plan_of(kCollectives)) {
    run.cases.push_back(case_of(c, run, allreduce_s(static_cast<double>(c.params.get_int("bytes")), ranks, nodes)));
  }
  return {std::to_string(ranks) + "x" + std::to_string(nodes) + ".h5", run};
}

ModelCase model_case(const Case& c) { return {c.experiment, c.workload, c.mode, c.params}; }

}  // namespace

TEST_CASE("least squares on relative residuals recovers exact terms and drops a negative one", "[model]") {
  const std::vector<std::vector<double>> x{{1, 10}, {1, 100}, {1, 1000}};
  const std::vector<double> y{2 + 10 * 0.5, 2 + 100 * 0.5, 2 + 1000 * 0.5};
  const LsqFit f = relative_nonneg_lsq(x, y, {true, true}, {0, 1}, {0, 0});
  REQUIRE(f.ok);
  CHECK(f.coef[0] == Approx(2));
  CHECK(f.coef[1] == Approx(0.5));
  CHECK(relative_rms(x, y, f.coef) == Approx(0).margin(1e-12));
  // y below what the slope alone gives at small x: the intercept would be negative, so it goes.
  const LsqFit g = relative_nonneg_lsq(x, {4, 49, 499}, {true, true}, {0, 1}, {0, 0});
  REQUIRE(g.ok);
  CHECK_FALSE(g.used[0]);
  CHECK(g.coef[0] == 0);
  CHECK(g.coef[1] == Approx((2.5 + 100 / 49.0 + 1000 / 499.0) /  // sum(x/y) / sum((x/y)^2)
                             (2.5 * 2.5 + std::pow(100 / 49.0, 2) + std::pow(1000 / 499.0, 2))));
  // Time that does not grow with size (noise at small sizes): the slope would be negative; the intercept goes
  // instead, so the slope the large sizes need is kept.
  const LsqFit h = relative_nonneg_lsq(x, {10, 9, 8}, {true, true}, {0, 1}, {0, 0});
  REQUIRE(h.ok);
  CHECK(h.used == std::vector<bool>{false, true});
  CHECK(h.coef[1] > 0);
}

TEST_CASE("ring steps per op, and the steps between nodes", "[model]") {
  CHECK(ring_steps("allreduce", 4) == 6);
  CHECK(ring_steps("allgather", 4) == 3);
  CHECK(ring_steps("reduce_scatter", 3) == 2);
  CHECK(ring_steps("sendrecv", 4) == 1);
  CHECK(ring_steps("p2p-bw", 2) == 1);
  CHECK(ring_steps("allreduce", 1) == 0);
  const auto row = transfer_row("allreduce", 4, 2, 1000);  // 4 ranks on 2 nodes: 2 steps cross, 4 stay inside
  CHECK(row[kAlphaIntra] == 4);
  CHECK(row[kAlphaInter] == 2);
  CHECK(row[kSecPerByteInter] == 1000);
  CHECK(row[kSecPerByteIntra] == 0);
  const auto one = transfer_row("allgather", 2, 1, 500);
  CHECK(one[kAlphaInter] == 0);
  CHECK(one[kSecPerByteIntra] == 500);
}

TEST_CASE("fitted on 2 and 3 nodes, the model gives back its terms and predicts 4 nodes", "[model]") {
  const Model m = fit_model({allreduce_file(2, 2), allreduce_file(3, 3)});
  const TransferFit* f = m.find_transfer(Backend::cpu, CommKind::mpi, "allreduce");
  REQUIRE(f != nullptr);
  CHECK(f->coef[kAlphaInter] == Approx(kAlpha).epsilon(1e-6));
  CHECK(f->coef[kSecPerByteInter] == Approx(kSecPerByte).epsilon(1e-6));
  CHECK_FALSE(f->fitted[kAlphaIntra]);
  CHECK(f->rel_rms == Approx(0).margin(1e-9));
  CHECK(f->points.size() == 6);

  const auto rows = predict_rows(m, m.cases, predict_job(m, 4, 4));
  REQUIRE(rows.size() == 3);
  for (const auto& r : rows) {
    REQUIRE(r.p.predicted());
    const double bytes = static_cast<double>(r.c.params.get_int("bytes"));
    CHECK(*r.p.op_time_s == Approx(allreduce_s(bytes, 4, 4)).epsilon(1e-6));
    CHECK(*r.p.busbw_gbps == Approx(bytes * 1.5 / allreduce_s(bytes, 4, 4) / 1e9).epsilon(1e-6));
    CHECK(r.p.median_s == Approx(allreduce_s(bytes, 4, 4) + 1e-6).epsilon(1e-6));  // and the host's microsecond
    CHECK(r.p.extrapolated == std::vector<std::string>{"allreduce on 4 ranks, beyond the 3 measured",
                                                       "allreduce on 4 nodes, beyond the 3 measured"});
    CHECK(r.p.lo_s <= r.p.median_s);
    CHECK(r.p.hi_s >= r.p.median_s);
  }
}

TEST_CASE("terms inside a node and between nodes combine for a job that has both", "[model]") {
  const Model m = fit_model({allreduce_file(2, 1), allreduce_file(2, 2), allreduce_file(3, 1)});
  const TransferFit* f = m.find_transfer(Backend::cpu, CommKind::mpi, "allreduce");
  REQUIRE(f != nullptr);
  CHECK(f->coef[kAlphaIntra] == Approx(kAlpha).epsilon(1e-6));
  CHECK(f->coef[kSecPerByteIntra] == Approx(kSecPerByte * 0.1).epsilon(1e-6));
  const Case c = plan_of(kCollectives)[2];  // 4 MiB
  const Prediction p = predict_case(m, model_case(c), predict_job(m, 4, 2));
  REQUIRE(p.predicted());
  const double bytes = 4194304;  // 4 ranks on 2 nodes: 4 steps inside, 2 between, the bytes at the slower link
  CHECK(*p.op_time_s == Approx(6 * kAlpha + bytes * 1.5 * kSecPerByte).epsilon(1e-6));
}

TEST_CASE("a gemm timed on one rank predicts the speedup of two, and of ranks sharing cores", "[model]") {
  const auto plan = plan_of("[[experiment]]\nname = \"g\"\nworkload = \"gemm\"\nsize = [64, 128]\n");
  RunRecord run = run_of(1, 1, 2);
  for (const auto& c : plan) run.cases.push_back(case_of(c, run, c.params.get_int("size") == 64 ? 1e-3 : 6e-3));
  const Model m = fit_model({{"one.h5", run}});
  REQUIRE(m.gemm.size() == 1);
  CHECK(m.gemm[0].points.size() == 2);
  const auto rows = predict_rows(m, m.cases, predict_job(m, 2, 1));
  REQUIRE(rows.size() == 4);
  const PredictRow& parallel = rows[0].c.mode == Mode::parallel ? rows[0] : rows[1];
  REQUIRE(parallel.speedup);
  CHECK(*parallel.speedup == Approx(2.0).epsilon(1e-6));
  CHECK(*parallel.efficiency == Approx(1.0).epsilon(1e-6));
  CHECK(parallel.p.parts.compute_s == Approx(1e-3).epsilon(1e-6));
  // Four ranks on a node of two cores: each has half a core, so the parallel sample takes twice as long.
  const auto crowded = predict_rows(m, m.cases, predict_job(m, 4, 1));
  const PredictRow& p4 = crowded[0].c.mode == Mode::parallel ? crowded[0] : crowded[1];
  CHECK(p4.p.parts.compute_s == Approx(2e-3).epsilon(1e-6));
  CHECK(*p4.speedup == Approx(4 * (1e-3 + 1e-6) / (2e-3 + 1e-6)).epsilon(1e-6));
}

TEST_CASE("a gemm between two measured sizes is interpolated in log size; beyond them it says so", "[model]") {
  const auto plan = plan_of("[[experiment]]\nname = \"g\"\nworkload = \"gemm\"\nsize = [64, 256]\n"
                            "modes = [\"parallel\"]\n");
  RunRecord run = run_of(1, 1);
  run.cases.push_back(case_of(plan[0], run, 2.0 * 64 * 64 * 64 / 1e9));      // 1 GFLOP/s at 64
  run.cases.push_back(case_of(plan[1], run, 2.0 * 256 * 256 * 256 / 3e9));  // 3 GFLOP/s at 256
  const Model m = fit_model({{"one.h5", run}});
  const auto mid = plan_of("[[experiment]]\nname = \"g\"\nworkload = \"gemm\"\nsize = [128, 512]\n"
                           "modes = [\"parallel\"]\n");
  const Prediction p = predict_case(m, model_case(mid[0]), predict_job(m, 1, 1));
  CHECK(p.parts.compute_s == Approx(2.0 * 128 * 128 * 128 / 2e9).epsilon(1e-3));  // halfway in log size: 2 GFLOP/s
  CHECK(p.extrapolated.empty());
  const Prediction big = predict_case(m, model_case(mid[1]), predict_job(m, 1, 1));
  CHECK(big.parts.compute_s == Approx(2.0 * 512 * 512 * 512 / 3e9).epsilon(1e-3));
  REQUIRE(big.extrapolated.size() == 1);
  CHECK_THAT(big.extrapolated[0], Catch::Contains("beyond the measured"));
}

TEST_CASE("a case the model has no rate for is listed with the reason, not guessed", "[model]") {
  const Model m = fit_model({allreduce_file(2, 2)});
  const auto other = plan_of("[[experiment]]\nname = \"ag\"\nworkload = \"collective\"\nop = \"allgather\"\n"
                             "[[experiment]]\nname = \"g\"\nworkload = \"gemm\"\nsize = 64\nmodes = [\"parallel\"]\n");
  const Prediction ag = predict_case(m, model_case(other[0]), predict_job(m, 2, 2));
  CHECK_FALSE(ag.predicted());
  CHECK(ag.unpredictable == "no fit for allgather over mpi on the cpu backend in the model's files");
  const Prediction g = predict_case(m, model_case(other.back()), predict_job(m, 2, 2));
  CHECK(g.unpredictable == "no GEMM rate for fp64 (vendor) on the cpu backend in the model's files");
  // Fitted between nodes only: a group inside one node has no bandwidth to go by.
  const Prediction inside = predict_case(m, model_case(plan_of(kCollectives)[0]), predict_job(m, 2, 1));
  CHECK(inside.unpredictable == "allreduce: the files measured no bandwidth inside a node (no group inside one node)");
}

TEST_CASE("an overlapped step's exposed transfer is what its compute does not hide", "[model]") {
  Model m = fit_model({allreduce_file(2, 2)});
  m.gemm.push_back(
      {Backend::cpu, "test cpu", "fp32", "vendor", {{1e3, 1e9, 0}, {1e12, 1e9, 0}}});  // 1 GFLOP/s per core
  const auto plan = plan_of("[[experiment]]\nname = \"dp\"\nworkload = \"dp_step\"\nhidden = 256\nbatch = 64\n"
                            "layers = 4\nbucket_bytes = 262144\noverlap = [true, false]\n");
  for (const auto& c : plan) {
    const Prediction p = predict_case(m, model_case(c), predict_job(m, 2, 2));
    REQUIRE(p.predicted());
    const double compute = 3 * 4 * 2.0 * 64 * 256 * 256 / 1e9;
    const double wire = 4 * (allreduce_s(262144, 2, 2));  // one bucket per layer (256 x 256 fp32 = 256 KiB)
    CHECK(p.parts.compute_s == Approx(compute).epsilon(1e-6));
    CHECK(p.parts.wire_s == Approx(wire).epsilon(1e-6));
    const bool overlap = c.params.get_bool("overlap");
    CHECK(p.parts.exposed_s == Approx(overlap ? std::max(0.0, wire - compute) : wire).epsilon(1e-6));
    CHECK(p.parts.sum() == Approx(p.median_s));
  }
}

TEST_CASE("the model file keeps every term and case, and says what is wrong with other files", "[model]") {
  const Model m = fit_model({allreduce_file(2, 2), allreduce_file(3, 3)});
  const std::string path = "test_model_roundtrip.json";
  {
    std::ofstream(path) << model_json(m);
  }
  CHECK(looks_like_json(path));
  const Model back = read_model_file(path);
  REQUIRE(back.transfers.size() == 1);
  CHECK(back.transfers[0].coef == m.transfers[0].coef);
  CHECK(back.transfers[0].fitted == m.transfers[0].fitted);
  CHECK(back.cases.size() == m.cases.size());
  CHECK(back.cases[0].params == m.cases[0].params);
  CHECK(back.sources.size() == 2);
  std::ofstream(path) << "{\"gemm\": []}";
  CHECK_THROWS_WITH(read_model_file(path), path + ": not a model file: it lacks \"format\": \"gpuscale-model\" (make "
                                                  "one with 'gpuscale model FILES... -o " + path + "')");
  std::ofstream(path) << "{\"format\": \"gpuscale-model\", \"format_version\": 9}";
  CHECK_THROWS_WITH(read_model_file(path), path + ": model format version 9, this gpuscale reads 1; fit it again "
                                                  "with 'gpuscale model'");
  std::ofstream(path) << "{\"format\": \"gpuscale-model\", \"format_version\": 1}";
  CHECK_THROWS_WITH(read_model_file(path), path + ": software_version: missing");
  std::ofstream(path) << "{not json";
  CHECK_THROWS_WITH(read_model_file(path), Catch::StartsWith(path + ": not a model file: not JSON ("));
  std::remove(path.c_str());
  CHECK_THROWS_WITH(read_model_file(path), path + ": no such file");
}

TEST_CASE("files with nothing of one kind of work to fit are refused", "[model]") {
  RunRecord run = run_of(2, 1);
  CHECK_THROWS_WITH(fit_model({{"empty.h5", run}}),
                    Catch::StartsWith("nothing in the file(s) can be fitted: the model needs cases that ran"));
}

TEST_CASE("predict against a measured run: the error of each case and a summary per op", "[model]") {
  const Model m = fit_model({allreduce_file(2, 2), allreduce_file(3, 3)});
  auto rows = predict_rows(m, m.cases, predict_job(m, 4, 4));
  RunRecord four = allreduce_file(4, 4).second;
  for (auto& c : four.cases) {  // measured 10% slower than the model's equation
    for (auto& t : c.device_time_s) t *= 1.1;
    for (std::size_t i = 0; i < c.wall_end_s.size(); ++i) c.wall_end_s[i] = c.wall_start_s[i] + c.device_time_s[i];
  }
  add_measured(rows, build_report(four));
  for (const auto& r : rows) {
    REQUIRE(r.error);
    CHECK(*r.error == Approx(0.1 / 1.1).epsilon(1e-6));
  }
  const auto summary = error_summary(rows);
  REQUIRE(summary.size() == 1);
  CHECK(summary[0].what == "collective allreduce");
  CHECK(summary[0].cases == 3);
  CHECK(summary[0].max == Approx(0.1 / 1.1).epsilon(1e-6));
}
