// The cost model: its least squares, the steps of each op, fits to files with
// known timings (the terms come back), predictions on other job shapes, the
// model file, and what it refuses.
#include <catch2/catch.hpp>

#include <algorithm>
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
#include "workloads/estimate.hpp"
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
  const auto row = transfer_row("allreduce", 4, 2, 1000, 1.0);  // 4 ranks on 2 nodes: 2 steps cross, 4 stay inside
  CHECK(row[kAlphaIntra] == 4);
  CHECK(row[kAlphaInter] == 2);
  CHECK(row[kSecPerByteInter] == 1000);
  CHECK(row[kSecPerByteIntra] == 0);
  const auto one = transfer_row("allgather", 2, 1, 500, 1.0);
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
  CHECK(f->error.rel_rms == Approx(0).margin(1e-9));
  CHECK(f->error.cases == 6);
  CHECK(f->error.terms == 2);
  CHECK(f->error.files == 2);
  CHECK(f->error.poor.empty());
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

TEST_CASE("a gemm between two measured sizes is interpolated in log size, beyond them it says so", "[model]") {
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
  CHECK_THROWS_WITH(read_model_file(path), path + ": not a gpuscale model file: it lacks \"format\": "
                                                  "\"gpuscale-model\" (make one with 'gpuscale model FILES... -o " +
                                                  path + "')");
  std::ofstream(path) << "{\"format\": \"gpuscale-model\", \"format_version\": 9}";
  CHECK_THROWS_WITH(read_model_file(path), path + ": model format version 9 is newer than this gpuscale reads (2); "
                                                  "predict with that gpuscale or a newer one, or fit it again with "
                                                  "this one ('gpuscale model')");
  std::ofstream(path) << "{\"format\": \"gpuscale-model\", \"format_version\": 1}";
  CHECK_THROWS_WITH(read_model_file(path), path + ": model format version 1, this gpuscale reads 2; fit it again "
                                                  "with 'gpuscale model'");
  std::ofstream(path) << "{\"format\": \"gpuscale-model\", \"format_version\": 2}";
  CHECK_THROWS_WITH(read_model_file(path), path + ": software_version: missing");
  std::ofstream(path) << "{not json";
  CHECK_THROWS_WITH(read_model_file(path), Catch::StartsWith(path + ": not a gpuscale model file: not JSON ("));
  std::remove(path.c_str());
  CHECK_THROWS_WITH(read_model_file(path), path + ": no such file");
}

TEST_CASE("files with nothing of one kind of work to fit are refused", "[model]") {
  RunRecord run = run_of(2, 1);
  CHECK_THROWS_WITH(fit_model({{"empty.h5", run}}),
                    Catch::StartsWith("nothing in the file(s) can be fitted: the model needs cases that ran"));
}

TEST_CASE("predict against a measured run: measured / predicted of each case and a summary per op", "[model]") {
  const Model m = fit_model({allreduce_file(2, 2), allreduce_file(3, 3)});
  auto rows = predict_rows(m, m.cases, predict_job(m, 4, 4));
  RunRecord four = allreduce_file(4, 4).second;
  for (auto& c : four.cases) {  // measured 10% slower than the model's equation
    for (auto& t : c.device_time_s) t *= 1.1;
    for (std::size_t i = 0; i < c.wall_end_s.size(); ++i) c.wall_end_s[i] = c.wall_start_s[i] + c.device_time_s[i];
  }
  CHECK(add_measured(rows, build_report(four)) == 3);
  for (const auto& r : rows) {
    REQUIRE(r.ratio);
    CHECK(*r.ratio == Approx(1.1).epsilon(1e-6));
    // A fit through its points exactly (no residual) with no sampling spread: its interval is the prediction alone.
    REQUIRE(r.inside);
    CHECK_FALSE(*r.inside);
  }
  const auto summary = error_summary(rows);
  REQUIRE(summary.size() == 1);
  CHECK(summary[0].what == "collective allreduce");
  CHECK(summary[0].cases == 3);
  CHECK(summary[0].max == Approx(1.1).epsilon(1e-6));
  CHECK(summary[0].inside == 0);
  CHECK(summary[0].with_interval == 3);
  // A file of other cases shares none.
  auto other = predict_rows(m, m.cases, predict_job(m, 4, 4));
  RunRecord gemm = run_of(4, 4);
  gemm.cases.push_back(case_of(plan_of("[[experiment]]\nname = \"g\"\nworkload = \"gemm\"\n")[0], gemm, 1e-3));
  CHECK(add_measured(other, build_report(gemm)) == 0);
}

namespace {

// A row predicted as `p` with the interval [lo, hi] (none where lo > hi), measured as `m`.
PredictRow row_of(const std::string& op, double p, double lo, double hi, double m) {
  PredictRow r;
  r.c = {"x", "collective", Mode::parallel, {}};
  r.c.params.set("op", op);
  r.p.median_s = p;
  r.p.lo_s = lo;
  r.p.hi_s = hi;
  if (lo > hi) r.p.no_interval = "none";
  r.ratio = m / p;
  if (r.p.has_interval()) r.inside = lo <= m && m <= hi;
  return r;
}

}  // namespace

TEST_CASE("the error is measured / predicted and its signed percentage, not capped at 100%", "[model]") {
  CHECK(ratio_text(16.4e-3 / 2.04e-3) == "8.04x");
  CHECK(signed_error_text(16.4e-3 / 2.04e-3) == "+704%");
  CHECK(signed_error_text(0.77) == "-23%");
  CHECK(signed_error_text(1.049) == "+4.9%");
  CHECK(signed_error_text(1.0) == "0.0%");
  const std::vector<PredictRow> rows{row_of("sendrecv", 2.04e-3, 1e-3, 4e-3, 16.4e-3),
                                     row_of("sendrecv", 1e-3, 0.5e-3, 2e-3, 1.5e-3),
                                     row_of("allreduce", 1e-3, 1, 0, 1.2e-3)};
  const auto s = error_summary(rows);
  REQUIRE(s.size() == 2);
  CHECK(s[0].what == "collective sendrecv");
  CHECK(s[0].median == Approx((16.4 / 2.04 + 1.5) / 2));
  CHECK(s[0].min == Approx(1.5));
  CHECK(s[0].max == Approx(16.4 / 2.04));
  CHECK(s[0].inside == 1);
  CHECK(s[0].with_interval == 2);
  CHECK(s[1].with_interval == 0);  // no interval: counted as measured, not as inside or outside
  const ErrorSummary all = total_summary(rows);
  CHECK(all.cases == 3);
  CHECK(all.inside == 1);
  CHECK(all.with_interval == 2);
}

TEST_CASE("Student's t and the unscaled covariance of a relative fit", "[model]") {
  CHECK(t_quantile_975(1) == Approx(12.706));
  CHECK(t_quantile_975(10) == Approx(2.228));
  CHECK(t_quantile_975(30) == Approx(2.042));
  CHECK(t_quantile_975(31) == Approx(2.040).margin(1e-3));
  CHECK(t_quantile_975(1000) == Approx(1.962).margin(1e-3));
  // Rows x / y = (1, 1), (1, 2), (1, 3): A^T A = [[3, 6], [6, 14]], its inverse [[14, -6], [-6, 3]] / 6.
  const std::vector<std::vector<double>> x{{2, 2}, {2, 4}, {2, 6}};
  const auto c = relative_unscaled_cov(x, {2, 2, 2}, {true, true});
  REQUIRE(c);
  CHECK((*c)[0][0] == Approx(14.0 / 6));
  CHECK((*c)[0][1] == Approx(-1.0));
  CHECK((*c)[1][1] == Approx(0.5));
  const auto one = relative_unscaled_cov(x, {2, 2, 2}, {false, true});  // a column left out stays 0
  REQUIRE(one);
  CHECK((*one)[0][0] == 0);
  CHECK((*one)[1][1] == Approx(1.0 / 14));
  CHECK_FALSE(relative_unscaled_cov({{1, 2}, {2, 4}}, {1, 1}, {true, true}));  // singular
}

namespace {

// A model of copies "pass" as fitted from `cases` cases with residual spread `log_se` and the given unscaled
// covariance of (latency, seconds per byte): 1 us per call, 1 GB/s, 1 KiB to 1 MiB measured.
Model copy_model(int cases, double log_se, const Unscaled<2>& c) {
  Model m;
  m.sources.push_back({"a.h5", "", Backend::cpu, CommKind::mpi, "test cpu", 1, 1, 8});
  m.node_cores = 8;
  CopyFit f{Backend::cpu, "pass", 1e-6, 1e9, 1024, 1048576, {}, c};
  f.error.cases = cases;
  f.error.terms = 2;
  f.error.files = 2;
  f.error.log_se = log_se;
  m.copies.push_back(f);
  return m;
}

// A pass of r += a * b over `elements` fp32 elements (16 bytes an element: a, b, r read, r written).
ModelCase elementwise_case(std::int64_t elements) {
  const auto plan = plan_of("[[experiment]]\nname = \"e\"\nworkload = \"elementwise\"\nelements = " +
                            std::to_string(elements) + "\nops = 1\nmodes = [\"parallel\"]\n");
  return model_case(plan[0]);
}

}  // namespace

TEST_CASE("an interval holds the fit's residual spread, by Student's t, and its leverage", "[model]") {
  const Unscaled<2> c{{{4e10, 0}, {0, 1e14}}};
  const Model m = copy_model(6, 0.2, c);
  const ModelCase k = elementwise_case(4096);
  const Prediction p = predict_case(m, k, predict_job(m, 1, 1));
  REQUIRE(p.predicted());
  REQUIRE(p.has_interval());
  const CaseWork w = case_work(Case{0, k.experiment, k.workload, k.mode, k.params, {}}, predict_job(m, 1, 1).shape);
  REQUIRE(w.sample.streams.size() == 1);
  const double calls = w.sample.streams[0].calls, bytes = w.sample.streams[0].bytes;
  const double s = calls * 1e-6 + bytes / 1e9;
  const double h = calls / s * 4e10 * calls / s + bytes / s * 1e14 * bytes / s;
  const double half = t_quantile_975(4) * 0.2 * std::sqrt(1 + h);  // 6 cases, 2 terms: 4 degrees of freedom
  CHECK(p.median_s - p.parts.overhead_s == Approx(s));
  CHECK(p.hi_s - p.median_s == Approx(s * std::expm1(half)));
  CHECK(p.median_s - p.lo_s == Approx(-s * std::expm1(-half)));
}

TEST_CASE("no interval where the data cannot support one, and the reason", "[model]") {
  const Unscaled<2> c{};
  const Prediction none = predict_case(copy_model(2, 0, c), elementwise_case(4096), predict_job(copy_model(2, 0, c),
                                                                                                  1, 1));
  REQUIRE(none.predicted());
  CHECK_FALSE(none.has_interval());
  CHECK(none.no_interval == "copies pass (cpu): 2 case(s) for 2 term(s) leave no degree of freedom: nothing shows "
                            "how far a case strays from the fit");
  Model m = copy_model(8, 0.1, c);
  const auto job = predict_job(m, 1, 1);
  CHECK(predict_case(m, elementwise_case(4096), job).has_interval());
  m.copies[0].error.files = 1;
  CHECK(predict_case(m, elementwise_case(4096), job).no_interval ==
        "copies pass (cpu): fitted from one run: its cases show no spread between runs, and another run strays by "
        "that too (fit two runs or more for an interval)");
  m.copies[0].error.files = 2;
  const Prediction far = predict_case(m, elementwise_case(1 << 20), job);  // 16 MiB a pass, 1 MiB measured
  REQUIRE(far.predicted());
  CHECK_THAT(far.no_interval, Catch::Contains("more than 2x beyond the 1 KiB-1 MiB measured"));
  // A transfer on more nodes than twice those measured.
  const Model t = fit_model({allreduce_file(2, 2), allreduce_file(3, 3)});
  const Prediction wide = predict_case(t, model_case(plan_of(kCollectives)[0]), predict_job(t, 8, 8));
  CHECK(wide.no_interval == "allreduce on 8 ranks more than 2x beyond the 3 ranks measured");
}

namespace {

// The allreduce files of allreduce_file, with case `index` of the 3-node file `factor` times slower.
Model fit_with_one_off(double factor, std::size_t index) {
  auto three = allreduce_file(3, 3);
  for (auto& t : three.second.cases[index].device_time_s) t *= factor;
  return fit_model({allreduce_file(2, 2), three, allreduce_file(4, 4)});
}

}  // namespace

TEST_CASE("a fit's error names its worst cases, and a poor fit says why it thinks so", "[model]") {
  const Model good = fit_with_one_off(1.0, 1);
  CHECK(good.transfers[0].error.poor.empty());
  const Model bad = fit_with_one_off(8.0, 1);
  const FitError& e = bad.transfers[0].error;
  CHECK(e.cases == 9);
  CHECK(e.rel_rms > kPoorFitRms);
  REQUIRE(!e.worst.empty());
  CHECK(e.worst[0].from == "3x3.h5 case 2");
  CHECK(e.worst[0].ratio > 2);
  CHECK_THAT(e.poor, Catch::StartsWith("one case far off: 3x3.h5 case 2 measured "));
  CHECK_THAT(fit_error_text(e), Catch::StartsWith("fit error ") && Catch::Contains("worst: 3x3.h5 case 2 (measured "));
  // A prediction from it repeats the warning.
  const Prediction p = predict_case(bad, model_case(plan_of(kCollectives)[0]), predict_job(bad, 4, 4));
  REQUIRE(p.poor_fits.size() == 1);
  CHECK_THAT(p.poor_fits[0], Catch::StartsWith("allreduce over mpi (cpu): fit error ") &&
                                 Catch::Contains("one case far off"));
}

TEST_CASE("files that disagree make a poor fit that says so", "[model]") {
  const auto plan = plan_of("[[experiment]]\nname = \"g\"\nworkload = \"gemm\"\nsize = [64, 128]\n"
                            "modes = [\"parallel\"]\n");
  RunRecord quiet = run_of(1, 1), busy = run_of(1, 1);
  for (const auto& c : plan) {
    const double t = c.params.get_int("size") == 64 ? 1e-3 : 8e-3;
    quiet.cases.push_back(case_of(c, quiet, t));
    busy.cases.push_back(case_of(c, busy, 2 * t));  // the same cases, twice as slow
  }
  const Model m = fit_model({{"quiet.h5", quiet}, {"busy.h5", busy}});
  REQUIRE(m.gemm.size() == 1);
  const FitError& e = m.gemm[0].error;
  CHECK(e.cases == 4);
  CHECK(e.terms == 2);
  CHECK(e.rel_rms > kPoorFitRms);
  CHECK_THAT(e.poor, Catch::Contains("the files disagree") && Catch::Contains("the cases of busy.h5 measured ") &&
                         Catch::Contains("those of quiet.h5 "));
  CHECK_THAT(e.poor, Catch::Contains("4 case(s) for 2 term(s): too few"));
}

namespace {

// A gemm sweep on 2 ranks of a node of 2 cores, threads = [1, 2]: the cases of 2 threads ask for 4 cores.
RunRecord crowded_run() {
  const auto plan = plan_of("[[experiment]]\nname = \"g\"\nworkload = \"gemm\"\nsize = [64, 128]\n"
                            "threads = [1, 2]\nmodes = [\"parallel\"]\n");
  RunRecord run = run_of(2, 1, 2);
  for (const auto& c : plan) run.cases.push_back(case_of(c, run, c.params.get_int("size") == 64 ? 1e-3 : 8e-3));
  return run;
}

}  // namespace

TEST_CASE("cases whose host makes their numbers doubtful are left out and named, unless asked for", "[model]") {
  const RunRecord run = crowded_run();
  const Model m = fit_model({{"c.h5", run}});
  REQUIRE(m.gemm.size() == 1);
  CHECK(m.gemm[0].error.cases == 2);  // the two of 1 thread
  REQUIRE(m.noisy.size() == 1);
  CHECK(m.noisy[0] == "c.h5 cases 3-4 (oversubscribed: 2 ranks x 2 threads on 2 cores of node 0)");
  CHECK(std::find(m.notes.begin(), m.notes.end(), "c.h5: 2 case(s) left out as noisy (--include-noisy fits them "
                  "anyway): cases 3-4 (oversubscribed: 2 ranks x 2 threads on 2 cores of node 0)") != m.notes.end());
  const Model all = fit_model({{"c.h5", run}}, {true});
  CHECK(all.gemm[0].error.cases == 4);
  CHECK(all.noisy == m.noisy);
  CHECK(all.noisy_fitted);
  CHECK(std::find(all.notes.begin(), all.notes.end(), "c.h5: 2 noisy case(s) fitted anyway (--include-noisy): "
                  "cases 3-4 (oversubscribed: 2 ranks x 2 threads on 2 cores of node 0)") != all.notes.end());
}

TEST_CASE("a fit left with one shape says so, and predicts other shapes without an interval", "[model]") {
  auto crowded = allreduce_file(3, 3);  // now 3 ranks on one node of 2 cores: every case oversubscribed
  crowded.second.nodes = 1;
  for (auto& r : crowded.second.ranks) {
    r.node_index = 0;
    r.node_cores = 2;
  }
  for (auto& c : crowded.second.cases) c.nodes = 1;
  auto again = allreduce_file(2, 2);
  again.first = "2x2-again.h5";
  const Model m = fit_model({allreduce_file(2, 2), again, crowded});
  CHECK(std::find(m.notes.begin(), m.notes.end(),
                  "fitted on 2 rank(s) on 2 node(s) only: 3x3.h5 (3 rank(s) on 1 node(s)) left out, every case noisy "
                  "(above); terms that need another shape are extrapolated, without an interval") != m.notes.end());
  const ModelCase c = model_case(plan_of(kCollectives)[0]);
  const Prediction there = predict_case(m, c, predict_job(m, 2, 2));
  CHECK(there.has_interval());  // the shape it was fitted on
  const Prediction p = predict_case(m, c, predict_job(m, 4, 4));
  REQUIRE(p.predicted());
  CHECK_FALSE(p.has_interval());
  CHECK(p.no_interval == "allreduce fitted on one group shape only (2 rank(s) on 2 node(s)): how its time grows "
                         "with the ranks and nodes was not measured (fit two shapes or more)");
  CHECK(std::find(p.extrapolated.begin(), p.extrapolated.end(),
                  "allreduce fitted on one group shape only (2 rank(s) on 2 node(s)), predicted on 4 rank(s) on 4 "
                  "node(s)") != p.extrapolated.end());
}

TEST_CASE("where every case that could be fitted is noisy, the fit fails naming them", "[model]") {
  RunRecord run = crowded_run();
  for (auto& r : run.ranks) r.node_cores = 1;  // every case now asks for more cores than the node has
  try {
    fit_model({{"c.h5", run}});
    FAIL("fitted");
  } catch (const InputError&) {
    FAIL("an input error (exit 2), not a failure to fit (exit 1)");
  } catch (const RuntimeError& e) {
    CHECK(std::string(e.what()) ==
          "nothing left to fit: the cases that could be fitted were all left out as noisy, their numbers not to be "
          "trusted: c.h5 cases 1-2 (oversubscribed: 2 ranks on 1 core of node 0); c.h5 cases 3-4 (oversubscribed: "
          "2 ranks x 2 threads on 1 core of node 0); run them again on a quiet machine, or give --include-noisy to "
          "fit them anyway");
  }
  CHECK(fit_model({{"c.h5", run}}, {true}).gemm.size() == 1);
}

namespace {

const std::string kOpenMpi414 = "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4";

// What an Open MPI 4.1 run reads of its settings: tuned's fixed rules, or a forced allreduce algorithm.
MpiSettings open_mpi_settings(const std::string& forced_allreduce = "0") {
  return {{"coll", ""},
          {"coll_tuned_priority", "30"},
          {"coll_tuned_use_dynamic_rules", forced_allreduce == "0" ? "0" : "1"},
          {"coll_tuned_allreduce_algorithm", forced_allreduce}};
}

// Allreduce of `bytes` on n ranks (one per node) as Open MPI's fixed rules run it, by hand: below 256 KiB on up to
// 3 ranks the segmented ring, else Rabenseifner, whose 3 ranks fold (5 steps, 3 buffers on rank 0's link).
double open_mpi_allreduce_s(double bytes, int n) {
  if (n < 4 && bytes < 262144) return 2 * (n - 1) * kAlpha + bytes * 2.0 * (n - 1) / n * kSecPerByte;
  if (n == 2) return 2 * kAlpha + bytes * kSecPerByte;
  if (n == 3) return 5 * kAlpha + bytes * 3 * kSecPerByte;
  return 4 * kAlpha + bytes * 1.5 * kSecPerByte;  // 4 ranks: 2 log2 4 steps, what the ring moves
}

std::pair<std::string, RunRecord> open_mpi_file(int n, const MpiSettings& settings, bool by_algorithm) {
  RunRecord run = run_of(n, n);
  run.mpi_library = kOpenMpi414;
  run.mpi_settings = settings;
  for (const auto& c : plan_of(kCollectives)) {
    const double bytes = static_cast<double>(c.params.get_int("bytes"));
    run.cases.push_back(case_of(c, run, by_algorithm ? open_mpi_allreduce_s(bytes, n) : allreduce_s(bytes, n, n)));
  }
  return {"ompi" + std::to_string(n) + ".h5", run};
}

}  // namespace

TEST_CASE("files of Open MPI's fixed rules fit exactly once each case has its algorithm's steps and bytes",
          "[model]") {
  const Model m = fit_model({open_mpi_file(2, open_mpi_settings(), true), open_mpi_file(3, open_mpi_settings(), true)});
  const TransferFit* f = m.find_transfer(Backend::cpu, CommKind::mpi, "allreduce");
  REQUIRE(f != nullptr);
  CHECK(f->coef[kAlphaInter] == Approx(kAlpha).epsilon(1e-6));
  CHECK(f->coef[kSecPerByteInter] == Approx(kSecPerByte).epsilon(1e-6));
  CHECK(f->error.rel_rms == Approx(0).margin(1e-9));
  CHECK(algorithms_measured(*f) == "segmented_ring (2, 3 ranks), rabenseifner (2, 3 ranks)");
  // 4 ranks run Rabenseifner at every size, which the files measured: priced by it, with an interval.
  const auto rows = predict_rows(m, m.cases, predict_job(m, 4, 4));
  REQUIRE(rows.size() == 3);
  for (const auto& r : rows) {
    REQUIRE(r.p.predicted());
    const double bytes = static_cast<double>(r.c.params.get_int("bytes"));
    CHECK(*r.p.op_time_s == Approx(open_mpi_allreduce_s(bytes, 4)).epsilon(1e-6));
    CHECK(r.p.no_interval.find("regime") == std::string::npos);
  }
  // The model file keeps the algorithm of every point and the files' settings.
  const Model back = read_model_json(model_json(m), "model-algorithms.json");
  CHECK(back.sources[0].mpi_library == kOpenMpi414);
  CHECK(back.sources[0].mpi_settings == open_mpi_settings());
  CHECK(algorithms_measured(back.transfers[0]) == algorithms_measured(*f));
}

TEST_CASE("a target whose MPI runs an algorithm the files never ran has no interval, and says so", "[model]") {
  // The files forced the ring (coll_tuned_allreduce_algorithm=4); the target runs tuned's fixed rules.
  const Model m = fit_model({open_mpi_file(2, open_mpi_settings("4"), false), open_mpi_file(3, open_mpi_settings("4"),
                                                                                          false)});
  PredictJob job = predict_job(m, 4, 4);
  const Case big = plan_of(kCollectives)[1];  // 1 MiB
  const Prediction forced = predict_case(m, model_case(big), job);
  REQUIRE(forced.predicted());
  CHECK(forced.no_interval.find("regime") == std::string::npos);  // the ring again: measured
  CHECK(*forced.op_time_s == Approx(allreduce_s(1048576, 4, 4)).epsilon(1e-6));
  job.mpi_settings = open_mpi_settings();
  const Prediction p = predict_case(m, model_case(big), job);
  REQUIRE(p.predicted());
  CHECK_FALSE(p.has_interval());
  CHECK(p.no_interval == "allreduce of 1 MiB on 4 ranks runs rabenseifner (Open MPI 4.1's tuned (fixed rules)); the "
                         "files measured ring (2, 3 ranks): that regime was not measured");
  CHECK(std::find(p.extrapolated.begin(), p.extrapolated.end(),
                  "allreduce of 1 MiB on 4 ranks runs rabenseifner (Open MPI 4.1's tuned (fixed rules)), which the "
                  "files never ran") != p.extrapolated.end());
  CHECK(*p.op_time_s == Approx(4 * kAlpha + 1048576 * 1.5 * kSecPerByte).epsilon(1e-6));  // priced as Rabenseifner
}

TEST_CASE("a target that sends in rendezvous where the files sent eager has no interval, and says so", "[model]") {
  MpiSettings eager = open_mpi_settings();
  eager.push_back({"pml", "ob1"});
  eager.push_back({"btl_tcp_eager_limit", "33554432"});  // every message eager
  const Model m = fit_model({open_mpi_file(2, eager, true), open_mpi_file(3, eager, true)});
  CHECK(algorithms_measured(m.transfers[0]) == "segmented_ring, eager (2, 3 ranks), rabenseifner, eager (2, 3 ranks)");
  PredictJob job = predict_job(m, 4, 4);
  const Case big = plan_of(kCollectives)[1];  // 1 MiB
  CHECK(predict_case(m, model_case(big), job).no_interval.find("regime") == std::string::npos);
  job.mpi_settings.back().second = "65536";  // Open MPI's default
  const Prediction p = predict_case(m, model_case(big), job);
  CHECK(p.no_interval == "allreduce of 1 MiB on 4 ranks runs rabenseifner, rendezvous (Open MPI 4.1's tuned (fixed "
                         "rules); btl_tcp_eager_limit=65536); the files measured segmented_ring, eager (2, 3 ranks), "
                         "rabenseifner, eager (2, 3 ranks): that regime was not measured");
}
