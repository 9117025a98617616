// A user's mistakes in a config file: each names the file, line and key, and
// offers the valid choices.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>

#include "common/config_text.hpp"
#include "core/config.hpp"
#include "core/config_shape.hpp"
#include "core/error.hpp"
#include "workloads/workload.hpp"

using namespace gpuscale;

namespace {
using testing::error_of;
using testing::parse;

const char* kIssueExample = R"(
[defaults]
backend = "cpu"      # auto | cpu | cuda
warmup = 2
reps = 10
threads = 1          # BLAS threads per rank

[[experiment]]
name = "gemm-512"
workload = "gemm"
size = 512           # or m, n, k
dtype = "fp64"       # fp64 | fp32 (more with the GPU backend)
ops = 4              # matmuls per timed sample
modes = ["serial", "parallel"]
)";
}  // namespace

TEST_CASE("the documented example config is accepted as written", "[config]") {
  const Config c = parse(kIssueExample);
  CHECK(c.defaults.backend == "cpu");
  CHECK(c.defaults.reps == 10);
  REQUIRE(c.experiments.size() == 1);
  const auto& e = c.experiments[0];
  CHECK(e.name == "gemm-512");
  CHECK(e.workload == "gemm");
  CHECK(e.modes == std::vector<Mode>{Mode::serial, Mode::parallel});
  auto find = [&](const std::string& k) {
    for (const auto& [key, vals] : e.params) {
      if (key == k) return vals;
    }
    return std::vector<Value>{};
  };
  CHECK(find("size") == std::vector<Value>{std::int64_t{512}});
  CHECK(find("dtype") == std::vector<Value>{std::string("fp64")});
  CHECK(find("ops") == std::vector<Value>{std::int64_t{4}});
  CHECK(find("reps") == std::vector<Value>{std::int64_t{10}});
  CHECK(find("m").empty());  // optional and not given
}

TEST_CASE("defaults fill what the file leaves out", "[config]") {
  const Config c = parse("[[experiment]]\nworkload = \"gemm\"\n");
  CHECK(c.defaults.backend == "auto");
  CHECK(c.defaults.warmup == 2);
  CHECK(c.defaults.threads == 1);
  CHECK(c.defaults.timeout_s == 0.0);  // auto: derived from each case
  CHECK(c.experiments[0].name == "experiment #1");
  CHECK(c.experiments[0].modes == std::vector<Mode>{Mode::serial, Mode::parallel});
}

TEST_CASE("under Slurm, threads default to the task's CPUs unless the config sets them", "[config]") {
  CHECK(environment_defaults(nullptr).threads == 1);
  CHECK(environment_defaults("4").threads == 4);
  CHECK(environment_defaults("").threads == 1);
  CHECK(environment_defaults("4(x2)").threads == 1);  // not a count: the built-in default
  CHECK(environment_defaults("0").threads == 1);
  const std::string one_default = "[[experiment]]\nworkload = \"gemm\"\n";
  const Config from_slurm = parse_config(one_default, "exp.toml", {}, workload_schemas(), environment_defaults("4"));
  CHECK(from_slurm.defaults.threads == 4);
  const Config set = parse_config("[defaults]\nthreads = 2\n" + one_default, "exp.toml", {}, workload_schemas(),
                                  environment_defaults("4"));
  CHECK(set.defaults.threads == 2);
  const Config overridden = parse_config(one_default, "exp.toml", {"threads=3"}, workload_schemas(),
                                         environment_defaults("4"));
  CHECK(overridden.defaults.threads == 3);
}

TEST_CASE("a typo in an experiment key names the line and suggests the key", "[config][errors]") {
  const auto e = error_of("[[experiment]]\nname = \"g\"\nworkload = \"gemm\"\nszie = 512\n");
  CHECK(e.rfind("exp.toml:4:1: experiment 'g': unknown key 'szie' (did you mean 'size'?); valid keys: ", 0) == 0);
  CHECK(e.find("dtype") != std::string::npos);
}

TEST_CASE("a typo in [defaults] lists the valid keys", "[config][errors]") {
  const auto e = error_of("[defaults]\nrepz = 3\n[[experiment]]\nworkload = \"gemm\"\n");
  CHECK(e == "exp.toml:2:1: unknown key 'repz' in [defaults] (did you mean 'reps'?); valid keys: backend, comm, warmup, "
             "warmup_s, reps, threads, timeout, seed, share_devices, budget_s, and the table [defaults.expect]");
}

TEST_CASE("a value of the wrong type says what was expected and what was found", "[config][errors]") {
  CHECK(error_of("[[experiment]]\nworkload = \"gemm\"\nsize = \"big\"\n") ==
        "exp.toml:3:8: experiment #1: key 'size' must be an integer, got string \"big\"");
  CHECK(error_of("[defaults]\nreps = 2.5\n[[experiment]]\nworkload = \"gemm\"\n") ==
        "exp.toml:2:8: [defaults] key 'reps' must be an integer, got number 2.5");
}

TEST_CASE("zero or negative sizes are refused", "[config][errors]") {
  CHECK(error_of("[[experiment]]\nworkload = \"gemm\"\nsize = 0\n") ==
        "exp.toml:3:8: experiment #1: key 'size' must be at least 1, got 0");
  CHECK(error_of("[[experiment]]\nworkload = \"gemm\"\nsize = [64, -5]\n") ==
        "exp.toml:3:13: experiment #1: key 'size' must be at least 1, got -5");
  CHECK(error_of("[defaults]\ntimeout = -1\n[[experiment]]\nworkload = \"gemm\"\n") ==
        "exp.toml:2:11: [defaults] key 'timeout' must be at least 0, got -1");
}

TEST_CASE("an unknown dtype lists the valid ones and the nearest", "[config][errors]") {
  CHECK(error_of("[[experiment]]\nworkload = \"gemm\"\ndtype = \"fp46\"\n") ==
        "exp.toml:3:9: experiment #1: key 'dtype' must be one of fp64, fp32, tf32, fp16, bf16; got \"fp46\" (did "
        "you mean 'fp16'?)");
}

// Every registered workload, as the messages list them.
std::string all_workloads() {
  std::string s;
  for (const auto& w : workload_schemas()) s += (s.empty() ? "" : ", ") + w.name;
  return s;
}

TEST_CASE("unknown workload and backend and mode are refused with the choices", "[config][errors]") {
  CHECK(all_workloads().rfind("gemm, copy, async, collective, elementwise, pipeline, distributed_gemm", 0) == 0);
  CHECK(error_of("[[experiment]]\nworkload = \"gemn\"\n") ==
        "exp.toml:2:12: experiment #1: unknown workload \"gemn\" (did you mean 'gemm'?); valid workloads: " +
            all_workloads());
  CHECK(error_of("[defaults]\nbackend = \"gpu\"\n[[experiment]]\nworkload = \"gemm\"\n").find(
            "[defaults] key 'backend' must be one of auto, cpu, cuda; got \"gpu\"") != std::string::npos);
  CHECK(error_of("[[experiment]]\nworkload = \"gemm\"\nmodes = [\"serial\", \"paralel\"]\n") ==
        "exp.toml:3:20: experiment #1: key 'modes' must be one of serial, parallel; got \"paralel\" (did you mean "
        "'parallel'?)");
}

TEST_CASE("structural mistakes are explained", "[config][errors]") {
  CHECK(error_of("[defaults]\nreps = 3\n") == "exp.toml: no experiments: add at least one [[experiment]] table");
  CHECK(error_of("[[experiment]]\nname = \"x\"\n") ==
        "exp.toml:1:1: experiment 'x': missing key 'workload' (one of " + all_workloads() + ")");
  CHECK(error_of("[experiment]\nworkload = \"gemm\"\n").find("write each as [[experiment]]") != std::string::npos);
  CHECK(error_of("[[experiment]]\nworkload = \"gemm\"\nsize = []\n").find("empty list") != std::string::npos);
  CHECK(error_of("[[experiment]]\nname = \"a\"\nworkload = \"gemm\"\n[[experiment]]\nname = \"a\"\nworkload = "
                 "\"gemm\"\n")
            .find("two experiments are named 'a'") != std::string::npos);
  CHECK(error_of("[defaults]\nreps = [1, 2]\n[[experiment]]\nworkload = \"gemm\"\n")
            .find("lists belong in an [[experiment]]") != std::string::npos);
  CHECK(error_of("[defualts]\n").find("unknown top-level key 'defualts' (did you mean 'defaults'?)") !=
        std::string::npos);
}

TEST_CASE("a TOML syntax error names line and column", "[config][errors]") {
  const auto e = error_of("[[experiment]]\nworkload = \"gemm\nsize = 4\n");
  CHECK(e.rfind("exp.toml:2:", 0) == 0);
  CHECK(e.find("TOML syntax error") != std::string::npos);
}

TEST_CASE("a missing file is one clear sentence", "[config][errors]") {
  try {
    load_config("/nonexistent/exp.toml", {}, workload_schemas());
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) == "/nonexistent/exp.toml: cannot read the file (does it exist?)");
  }
}

TEST_CASE("overrides (--set) change defaults and experiment keys with TOML values", "[config][set]") {
  const Config c = parse(kIssueExample, {"reps=3", "gemm-512.size=[128, 256]", "dtype=fp32"});
  CHECK(c.defaults.reps == 3);
  const auto& p = c.experiments[0].params;
  auto find = [&](const std::string& k) {
    for (const auto& [key, vals] : p) {
      if (key == k) return vals;
    }
    return std::vector<Value>{};
  };
  CHECK(find("size") == std::vector<Value>{std::int64_t{128}, std::int64_t{256}});
  CHECK(find("dtype") == std::vector<Value>{std::string("fp32")});
  CHECK(find("reps") == std::vector<Value>{std::int64_t{3}});  // the experiment takes reps from [defaults]
}

TEST_CASE("a bad --set names the override and the valid keys", "[config][set][errors]") {
  CHECK(error_of(kIssueExample, {"szie=4"}).rfind("--set szie=4: unknown key 'szie' (did you mean 'size'?)", 0) == 0);
  CHECK(error_of(kIssueExample, {"nope.size=4"}) ==
        "--set nope.size=4: no experiment named 'nope'; experiments: gemm-512 (or use defaults.size)");
  CHECK(error_of(kIssueExample, {"size"}).rfind("--set size: expected KEY=VALUE", 0) == 0);
  CHECK(error_of(kIssueExample, {"size=-1"}) == "--set size=-1: experiment 'gemm-512': key 'size' must be at least 1, got -1");
  CHECK(error_of(kIssueExample, {"defaults.size=4"}).rfind("--set defaults.size=4: unknown key 'defaults.size'", 0) == 0);
  // What follows a line break would be read as more lines of the file, or dropped without a word.
  CHECK(error_of(kIssueExample, {"reps=5\nsize=1"}) ==  // escaped: a config's mistakes are a line each
        "--set reps=5\\x0asize=1: holds a line break; a --set is one line (arrays and inline tables fit on one)");
  CHECK(error_of(kIssueExample, {"reps=5\r"}).find(": holds a line break;") != std::string::npos);
}

TEST_CASE("integer ranges expand geometrically or arithmetically", "[config][range]") {
  auto values = [](const std::string& v) {
    const Config c = parse("[[experiment]]\nworkload = \"copy\"\nbytes = " + v + "\n");
    for (const auto& [key, vals] : c.experiments[0].params) {
      if (key == "bytes") return vals;
    }
    return std::vector<Value>{};
  };
  CHECK(values("{ from = 1024, to = 16384, factor = 4 }") ==
        std::vector<Value>{std::int64_t{1024}, std::int64_t{4096}, std::int64_t{16384}});
  CHECK(values("{ from = 1, to = 10, step = 4 }") == std::vector<Value>{std::int64_t{1}, std::int64_t{5}, std::int64_t{9}});
  CHECK(values("{ from = 3, to = 3, factor = 2 }") == std::vector<Value>{std::int64_t{3}});
  // 1, 1.5, 2.25, 3.375 round to 1, 2, 2, 3: each value once.
  CHECK(values("{ from = 1, to = 4, factor = 1.5 }") ==
        std::vector<Value>{std::int64_t{1}, std::int64_t{2}, std::int64_t{3}});
}

TEST_CASE("a malformed range says how to write one", "[config][range][errors]") {
  const std::string head = "[[experiment]]\nworkload = \"copy\"\nbytes = ";
  CHECK(error_of(head + "{ from = 1, to = 8 }\n").find("incomplete range (write {from = A, to = B, factor = F}") !=
        std::string::npos);
  CHECK(error_of(head + "{ from = 8, to = 1, factor = 2 }\n") ==
        "exp.toml:3:26: experiment #1: key 'bytes': range 'to' (1) is below 'from' (8)");
  CHECK(error_of(head + "{ from = 1, to = 8, factor = 1 }\n").find("'factor' must be greater than 1") !=
        std::string::npos);
  CHECK(error_of(head + "{ from = 0, to = 8, factor = 2 }\n").find("key 'bytes' must be at least 1, got 0") !=
        std::string::npos);
  CHECK(error_of(head + "{ from = 1, upto = 8, factor = 2 }\n").find("unknown range key 'upto'") != std::string::npos);
  CHECK(error_of("[[experiment]]\nworkload = \"gemm\"\ndtype = { from = 1, to = 2, step = 1 }\n")
            .find("key 'dtype' must be a string, got a table") != std::string::npos);
}

TEST_CASE("warm-up by time: seconds from [defaults] or an experiment, zero allowed, negative refused", "[config][warmup]") {
  auto warmup_s_of = [](const Config& c, std::size_t e) -> std::vector<Value> {
    for (const auto& [key, vals] : c.experiments.at(e).params) {
      if (key == "warmup_s") return vals;
    }
    return {};
  };
  const std::string two = "[[experiment]]\nname = \"a\"\nworkload = \"gemm\"\n"
                          "[[experiment]]\nname = \"b\"\nworkload = \"gemm\"\nwarmup_s = [0, 1.5]\n";
  // Not given: absent, and the runner uses the backend's default.
  CHECK(warmup_s_of(parse(two), 0).empty());
  CHECK(warmup_s_of(parse("[defaults]\nwarmup_s = 0.25\n" + two), 0) == std::vector<Value>{0.25});
  CHECK(warmup_s_of(parse(two), 1) == std::vector<Value>{0.0, 1.5});
  CHECK(error_of("[defaults]\nwarmup_s = -1\n[[experiment]]\nworkload = \"gemm\"\n") ==
        "exp.toml:2:12: [defaults] key 'warmup_s' must be at least 0, got -1");
  CHECK(error_of("[[experiment]]\nworkload = \"gemm\"\nwarmup_s = \"long\"\n") ==
        "exp.toml:3:12: experiment #1: key 'warmup_s' must be a number, got string \"long\"");
}

TEST_CASE("graph = true is refused on the CPU backend and where the host waits inside the sample", "[config][graph]") {
  const RunTarget cpu{Backend::cpu, CommKind::mpi}, cuda{Backend::cuda, CommKind::nccl};
  auto params = [](const std::string& workload, const std::vector<std::pair<std::string, Value>>& extra) {
    std::string text = "[[experiment]]\nname = \"x\"\nworkload = \"" + workload + "\"\nmodes = [\"parallel\"]\n";
    for (const auto& [k, v] : extra) {
      text += k + " = " + (std::holds_alternative<std::string>(v) ? "\"" + to_string(v) + "\"" : to_string(v)) + "\n";
    }
    return parse(text).experiments.at(0);
  };
  auto why = [&](const std::string& workload, const std::vector<std::pair<std::string, Value>>& extra,
                 const RunTarget& t) {
    const Experiment e = params(workload, extra);
    Params p;
    for (const auto& [k, vals] : e.params) p.set(k, vals.at(0));
    return find_workload(workload).unsupported(p, t);
  };
  CHECK(why("gemm", {{"graph", true}}, cpu) == "graph = true needs the CUDA backend (CUDA graphs)");
  CHECK(why("gemm", {{"graph", true}, {"dtype", std::string("fp32")}}, cuda).empty());
  CHECK(why("gemm", {{"graph", false}}, cpu).empty());
  CHECK(why("async", {{"graph", true}}, cuda).empty());
  CHECK(why("async", {{"graph", true}, {"log_norm", std::string("device")}}, cuda).empty());
  const std::string waits = "graph = true cannot record sync = \"each\" or log_norm = \"host\": the host waits for the "
                            "device inside the sample";
  CHECK(why("async", {{"graph", true}, {"sync", std::string("each")}}, cuda) == waits);
  CHECK(why("async", {{"graph", true}, {"log_norm", std::string("host")}}, cuda) == waits);
  CHECK(why("async", {{"sync", std::string("each")}}, cuda).empty());  // eager: fine
}

TEST_CASE("[experiment.expect] limits are read, and bad ones are input errors", "[config][expect]") {
  const std::string gemm = std::string(kIssueExample) + "[experiment.expect]\n";
  const Config cfg = parse(gemm + "min_gflops_per_rank = 50\nmax_median_s = 0.5\nmin_efficiency = 0.8\n");
  const std::vector<std::pair<std::string, double>> want{  // in the order of their names
      {"max_median_s", 0.5}, {"min_efficiency", 0.8}, {"min_gflops_per_rank", 50.0}};
  CHECK(cfg.experiments[0].expect == want);
  CHECK(parse(kIssueExample).experiments[0].expect.empty());

  CHECK(error_of(gemm + "min_gflop_per_rank = 50\n") ==
        "exp.toml:16:1: experiment 'gemm-512': unknown limit 'min_gflop_per_rank' in [experiment.expect] (did you "
        "mean 'min_gflops_per_rank'?); valid limits: max_median_s, min_gflops_per_rank, min_gbps_per_rank, "
        "min_busbw_gbps, min_efficiency, min_of_vendor, max_slowest_ratio");
  CHECK(error_of(gemm + "min_gflops_per_rank = \"fast\"\n") ==
        "exp.toml:16:23: experiment 'gemm-512': [experiment.expect] min_gflops_per_rank must be a number, got string "
        "\"fast\"");
  CHECK(error_of(gemm + "max_median_s = -1\n") ==
        "exp.toml:16:16: experiment 'gemm-512': [experiment.expect] max_median_s must be above 0, got integer -1");
  CHECK(error_of(gemm + "max_median_s = nan\n").find("max_median_s must be above 0, got number nan") !=
        std::string::npos);
  CHECK(error_of(gemm + "min_efficiency = 80\n") ==
        "exp.toml:16:18: experiment 'gemm-512': [experiment.expect] min_efficiency is a share of perfect scaling: "
        "above 0 and at most 1 (e.g. 0.8), got integer 80");
  CHECK(error_of(gemm + "min_busbw_gbps = 10\n") ==
        "exp.toml:16:1: experiment 'gemm-512': [experiment.expect] min_busbw_gbps cannot be measured here: workload "
        "gemm moves no data between ranks (busbw is a collective's)");
  CHECK(error_of(gemm + "min_gbps_per_rank = 10\n") ==
        "exp.toml:16:1: experiment 'gemm-512': [experiment.expect] min_gbps_per_rank cannot be measured here: "
        "workload gemm is rated in GFLOP/s, not GB/s");
  CHECK(error_of("[[experiment]]\nname = \"c\"\nworkload = \"copy\"\nexpect = {min_gflops_per_rank = 1}\n") ==
        "exp.toml:4:11: experiment 'c': [experiment.expect] min_gflops_per_rank cannot be measured here: workload "
        "copy is rated in GB/s, not GFLOP/s");
  CHECK(error_of("[[experiment]]\nname = \"p\"\nworkload = \"gemm\"\nmodes = \"parallel\"\n"
                 "expect = {min_efficiency = 0.5}\n") ==
        "exp.toml:5:11: experiment 'p': [experiment.expect] min_efficiency cannot be measured here: efficiency needs "
        "modes serial and parallel (speedup of parallel over serial / turns)");
  CHECK(error_of("[[experiment]]\nname = \"p\"\nworkload = \"gemm\"\nexpect = 3\n") ==
        "exp.toml:4:10: experiment 'p': 'expect' must be a table of limits, e.g. [experiment.expect] with "
        "max_median_s, min_gflops_per_rank, min_gbps_per_rank, min_busbw_gbps, min_efficiency, min_of_vendor, "
        "max_slowest_ratio; got integer 3");
  // Of vendor: gemm, with a kernel of ours among the cases; above 1 is allowed (a kernel may beat the library).
  CHECK(error_of("[[experiment]]\nname = \"c\"\nworkload = \"copy\"\nexpect = {min_of_vendor = 0.5}\n") ==
        "exp.toml:4:11: experiment 'c': [experiment.expect] min_of_vendor cannot be measured here: workload copy has "
        "no vendor share (of vendor compares our kernels with the vendor library's)");
  CHECK(error_of("[[experiment]]\nname = \"v\"\nworkload = \"gemm\"\nexpect = {min_of_vendor = 0.5}\n") ==
        "exp.toml:4:11: experiment 'v': [experiment.expect] min_of_vendor cannot be measured here: every case is "
        "impl = \"vendor\"; the limit bounds our kernels' share of it (list them in impl, beside \"vendor\" here or in "
        "another experiment of the run)");
  CHECK(parse("[[experiment]]\nname = \"k\"\nworkload = \"gemm\"\nimpl = [\"vendor\", \"naive\"]\n"
              "expect = {min_of_vendor = 1.5}\n")
            .experiments[0]
            .expect.size() == 1);
  // Collectives: busbw and GB/s per rank.
  CHECK(parse("[[experiment]]\nname = \"c\"\nworkload = \"collective\"\n"
              "expect = {min_busbw_gbps = 1, min_gbps_per_rank = 0.5}\n")
            .experiments[0]
            .expect.size() == 2);
  // The straggler ratio: any workload and mode; the slowest rank's median is never below the median rank's.
  CHECK(parse(gemm + "max_slowest_ratio = 1\n").experiments[0].expect ==
        std::vector<std::pair<std::string, double>>{{"max_slowest_ratio", 1.0}});
  CHECK(error_of(gemm + "max_slowest_ratio = 0.9\n") ==
        "exp.toml:16:21: experiment 'gemm-512': [experiment.expect] max_slowest_ratio is the slowest rank's median "
        "over the other ranks' median, 1 or more: at least 1 (e.g. 1.5), got number 0.9");
}

namespace {
// Two experiments of one mode each (neither has an efficiency) and one of both, after `defaults`.
std::string three_experiments(const std::string& defaults, const std::string& copy_expect = "") {
  return defaults +
         "\n[[experiment]]\nname = \"g\"\nworkload = \"gemm\"\n"
         "[[experiment]]\nname = \"c\"\nworkload = \"copy\"\nmodes = \"parallel\"\n" + copy_expect +
         "\n[[experiment]]\nname = \"a\"\nworkload = \"collective\"\nmodes = \"parallel\"\n";
}
}  // namespace

TEST_CASE("[defaults.expect] bounds every experiment that can measure the limit, unless it sets its own",
          "[config][expect]") {
  using Limits = std::vector<std::pair<std::string, double>>;
  const Config cfg = parse(three_experiments("[defaults.expect]\nmax_slowest_ratio = 1.5\nmin_efficiency = 0.8\n",
                                             "expect = {max_slowest_ratio = 2, min_gbps_per_rank = 1}"));
  CHECK(cfg.experiments[0].expect == Limits{{"max_slowest_ratio", 1.5}, {"min_efficiency", 0.8}});
  CHECK(cfg.experiments[1].expect == Limits{{"max_slowest_ratio", 2.0}, {"min_gbps_per_rank", 1.0}});  // its own
  CHECK(cfg.experiments[2].expect == Limits{{"max_slowest_ratio", 1.5}});  // one mode: no efficiency
  // --set defaults.expect={...} replaces the run's limits.
  const Config set = parse(three_experiments("[defaults.expect]\nmax_slowest_ratio = 1.5\n"),
                           {"defaults.expect={max_median_s = 9}"});
  CHECK(set.experiments[2].expect == Limits{{"max_median_s", 9.0}});

  // A limit no experiment can measure names its line and an experiment's reason.
  CHECK(error_of(three_experiments("[defaults.expect]\nmin_of_vendor = 0.5\n")) ==
        "exp.toml:2:1: [defaults.expect] min_of_vendor cannot be measured by any experiment: experiment 'g': every "
        "case is impl = \"vendor\"; the limit bounds our kernels' share of it (list them in impl, beside \"vendor\" "
        "here or in another experiment of the run)");
  CHECK(error_of(three_experiments("[defaults.expect]\nmax_slowest_ratio = 0.5\n")) ==
        "exp.toml:2:21: [defaults.expect] max_slowest_ratio is the slowest rank's median over the other ranks' median, 1 "
        "or more: at least 1 (e.g. 1.5), got number 0.5");
  CHECK(error_of(three_experiments("[defaults.expect]\nmax_slowst_ratio = 1.5\n")) ==
        "exp.toml:2:1: unknown limit 'max_slowst_ratio' in [defaults.expect] (did you mean 'max_slowest_ratio'?); "
        "valid limits: max_median_s, min_gflops_per_rank, min_gbps_per_rank, min_busbw_gbps, min_efficiency, "
        "min_of_vendor, max_slowest_ratio");
  CHECK(error_of(three_experiments("[defaults.expect]\nmin_efficiency = 1.2\n")) ==
        "exp.toml:2:18: [defaults.expect] min_efficiency is a share of perfect scaling: above 0 and at most 1 (e.g. "
        "0.8), got number 1.2");
  CHECK(error_of(three_experiments("[defaults]\nexpect = 1.5\n")) ==
        "exp.toml:2:10: [defaults] key 'expect' must be a table of limits, e.g. [defaults.expect] with max_median_s, "
        "min_gflops_per_rank, min_gbps_per_rank, min_busbw_gbps, min_efficiency, min_of_vendor, max_slowest_ratio; "
        "got number 1.5");
  CHECK(error_of(three_experiments("[defaults]\nexpects = {max_median_s = 1}\n")) ==
        "exp.toml:2:1: unknown key 'expects' in [defaults] (did you mean 'expect'?); valid keys: backend, comm, "
        "warmup, warmup_s, reps, threads, timeout, seed, share_devices, budget_s, and the table [defaults.expect]");
  CHECK(error_of(three_experiments("[defaults.expect]\nmax_median_s = \"1 s\"\n")) ==
        "exp.toml:2:16: [defaults.expect] max_median_s must be a number, got string \"1 s\"");
}

namespace {
// The text of a value at the edge of a key's range, as a config writes it.
std::string int_text(double v) { return std::to_string(static_cast<long long>(v)); }
}  // namespace

TEST_CASE("every integer key has a maximum: at it is accepted, past it is refused naming it", "[config][limits]") {
  for (const auto& w : workload_schemas()) {
    std::vector<ParamSpec> specs = w.params;
    for (const char* k : {"warmup", "reps", "threads"}) {  // the common ones, given in the experiment
      specs.push_back({k, ParamType::Int, "", std::nullopt, 1, {}, k == std::string("threads") ? 4096.0 : kMaxCount});
    }
    for (const auto& spec : specs) {
      if (spec.type != ParamType::Int) continue;
      INFO(w.name << "." << spec.key);
      REQUIRE(std::isfinite(spec.max));
      const std::string head = "[[experiment]]\nname = \"e\"\nworkload = \"" + w.name + "\"\n" + spec.key + " = ";
      CHECK_NOTHROW(parse(head + int_text(spec.max) + "\n"));
      CHECK(error_of(head + int_text(spec.max + 1) + "\n") ==
            "exp.toml:4:" + std::to_string(spec.key.size() + 4) + ": experiment 'e': key '" + spec.key +
                "' must be at most " + int_text(spec.max) + ", got " + int_text(spec.max + 1));
    }
  }
}

TEST_CASE("the issue's counts past an int are refused where they are read", "[config][limits]") {
  const std::string e = "[[experiment]]\nworkload = \"gemm\"\n";
  CHECK(error_of("[defaults]\nreps = 4294967297\n" + e) ==
        "exp.toml:2:8: [defaults] key 'reps' must be at most 2147483647, got 4294967297");
  CHECK(error_of("[defaults]\nwarmup = 2147483648\n" + e) ==
        "exp.toml:2:10: [defaults] key 'warmup' must be at most 2147483647, got 2147483648");
  CHECK(error_of("[defaults]\nthreads = 4097\n" + e) ==
        "exp.toml:2:11: [defaults] key 'threads' must be at most 4096, got 4097");
  CHECK(error_of(e + "size = 1048577\n") ==
        "exp.toml:3:8: experiment #1: key 'size' must be at most 1048576, got 1048577");
  CHECK(error_of(e, {"reps=2147483648"}) ==
        "--set reps=2147483648: [defaults] key 'reps' must be at most 2147483647, got 2147483648");
  // The seed takes any integer TOML can write.
  CHECK(parse("[defaults]\nseed = 9223372036854775807\n" + e).defaults.seed == INT64_MAX);
}

TEST_CASE("every duration is at most 30 days", "[config][limits]") {
  const std::string e = "[[experiment]]\nworkload = \"gemm\"\n";
  for (const char* key : {"timeout", "warmup_s", "budget_s"}) {
    INFO(key);
    CHECK_NOTHROW(parse(std::string("[defaults]\n") + key + " = 2592000\n" + e));
    CHECK(error_of(std::string("[defaults]\n") + key + " = 1e10\n" + e) ==
          "exp.toml:2:" + std::to_string(std::string(key).size() + 4) + ": [defaults] key '" + key +
              "' must be at most 2592000 (30 days), got 1e+10");
  }
  CHECK(error_of(e + "warmup_s = 2592000.5\n") ==
        "exp.toml:3:12: experiment #1: key 'warmup_s' must be at most 2592000 (30 days), got 2.592e+06");
  CHECK(error_of(e + "[experiment.expect]\nmax_median_s = 3e6\n") ==
        "exp.toml:4:16: experiment #1: [experiment.expect] max_median_s must be at most 2592000 (30 days), got number "
        "3e+06");
}

TEST_CASE("a range never overflows and stays within its key's maximum", "[config][range][limits]") {
  auto values = [](const std::string& v) {
    const Config c = parse("[[experiment]]\nworkload = \"copy\"\nbytes = " + v + "\n");
    for (const auto& [key, vals] : c.experiments[0].params) {
      if (key == "bytes") return vals;
    }
    return std::vector<Value>{};
  };
  // The issue's sweep: 'to' past the key's maximum.
  CHECK(error_of("[[experiment]]\nworkload = \"copy\"\nbytes = {from = 2, to = 9223372036854775807, factor = "
                 "4611686018427387904}\n") ==
        "exp.toml:3:25: experiment #1: key 'bytes' must be at most 1099511627776, got 9223372036854775807");
  // Steps that would overflow end the range instead.
  CHECK(values("{from = 2, to = 1099511627776, factor = 4611686018427387904}") == std::vector<Value>{std::int64_t{2}});
  CHECK(values("{from = 1099511627775, to = 1099511627776, step = 9223372036854775807}") ==
        std::vector<Value>{std::int64_t{1099511627775}});
  CHECK(values("{from = 3, to = 1099511627776, factor = 1e300}") == std::vector<Value>{std::int64_t{3}});
  const auto doubling = values("{from = 1, to = 1099511627776, factor = 2}");
  REQUIRE(doubling.size() == 41);
  CHECK(doubling.back() == Value{std::int64_t{1} << 40});
}

TEST_CASE("keys and values nested past the bounds are refused before the TOML parser sees them", "[config][shape]") {
  std::string parts = "x";
  for (int i = 0; i < 50000; ++i) parts += ".x";  // a 100 KB file that crashed toml++
  CHECK(error_of("[[experiment]]\nworkload = \"gemm\"\n" + parts + " = 1\n") ==
        "exp.toml:3:1: a key of more than 32 dotted parts (a config's keys have one or two, e.g. [experiment.expect])");
  auto dotted = [](int n) {
    std::string k = "a";
    for (int i = 1; i < n; ++i) k += ".a";
    return k;
  };
  CHECK(error_of("# a header\n  [" + dotted(33) + "]\n").rfind("exp.toml:2:4: a key of more than 32 dotted parts", 0) ==
        0);
  CHECK(error_of("[[" + dotted(33) + "]]\n").rfind("exp.toml:1:3: a key of more than 32 dotted parts", 0) == 0);
  CHECK(error_of("x = {b = 1, " + dotted(33) + " = 2}\n").rfind("exp.toml:1:13: a key of more than 32", 0) == 0);
  // At the bound the parser has the file, and finds what is wrong with it.
  CHECK(error_of("[" + dotted(32) + "]\n").rfind("exp.toml:1:2: unknown top-level key 'a'", 0) == 0);
  CHECK(error_of("\"a.b\".'c.d'.\"e\\\".f\" = 1\n").rfind("exp.toml:1:1: unknown top-level key 'a.b'", 0) == 0);

  const std::string head = "[[experiment]]\nworkload = \"gemm\"\nsize = ";
  CHECK(error_of(head + std::string(33, '[') + std::string(33, ']') + "\n") ==
        "exp.toml:3:40: values nested more than 32 deep (arrays and inline tables inside one another; a config needs "
        "two or three)");
  std::string tables;
  for (int i = 0; i < 33; ++i) tables += "{a = ";
  CHECK(error_of(head + "[\n  1,\n  " + tables + "1\n").rfind("exp.toml:5:158: values nested more than 32 deep", 0) ==
        0);
  CHECK(error_of(head + std::string(32, '[') + std::string(32, ']') + "\n") ==
        "exp.toml:3:9: experiment #1: key 'size' must be an integer or a list of them, got an array inside the list");
}

TEST_CASE("brackets in strings and comments are not nesting", "[config][shape]") {
  const std::string brackets(40, '[');
  const Config c = parse("# " + brackets + "\n[[experiment]]  # {{{{\nname = \"" + brackets + " \\\" {\"\n" +
                         "workload = 'gemm' # " + brackets + "\n[experiment.expect]\n\"max_median_s\" = 1\n");
  CHECK(c.experiments.at(0).name == brackets + " \" {");
  // Strings over several lines, escaped quotes and backslashes: the scan goes on in step, counting lines.
  const std::string strings = "a = \"\"\"\n" + brackets + "\n\\\"\"\"\n\"\"\"\nb = '''\n" + brackets + "'''\n" +
                              "c = [\"]\", ']', \"\\\\\", '\\\\'] # ]]]]\n";
  CHECK_NOTHROW(check_config_shape(strings, "exp.toml"));
  CHECK_THROWS_WITH(check_config_shape(strings + "d = " + brackets + "\n", "exp.toml"),
                    "exp.toml:8:37: values nested more than 32 deep (arrays and inline tables inside one another; a "
                    "config needs two or three)");
}

TEST_CASE("a --set value is bounded as a file is", "[config][set][shape]") {
  CHECK(error_of(kIssueExample, {"size=" + std::string(40, '[') + "1" + std::string(40, ']')}) ==
        "--set size=" + std::string(40, '[') + "1" + std::string(14, ']') + "... (86 characters): values nested more "
        "than 32 deep (arrays and inline tables inside one another; a config needs two or three)");
  std::string dotted = "{a";
  for (int i = 0; i < 40; ++i) dotted += ".a";
  CHECK(error_of(kIssueExample, {"size=" + dotted + " = 1}"}).find("a key of more than 32 dotted parts") !=
        std::string::npos);
  CHECK(error_of(kIssueExample, {"size=" + std::string(kMaxConfigBytes, '1')}).find(
            "; a config may hold at most 1048576 bytes (1 MiB)") != std::string::npos);
}

TEST_CASE("a config file is a regular file of at most 1 MiB, nothing else is opened or read", "[config][shape]") {
  auto load_error = [](const std::string& path) {
    try {
      load_config(path, {}, workload_schemas());
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(load_error("/dev/zero") == "/dev/zero: is a character device, not a config file (a TOML file)");
  const std::string dir = std::filesystem::temp_directory_path() / ("gpuscale-config-" + std::to_string(getpid()));
  std::filesystem::create_directory(dir);
  CHECK(load_error(dir) == dir + ": is a directory, not a config file (a TOML file)");
  const std::string fifo = dir + "/fifo.toml";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(load_error(fifo) == fifo + ": is a FIFO, not a config file (a TOML file)");  // and does not wait for a writer
  const std::string big = dir + "/big.toml";
  std::ofstream(big) << "[[experiment]]\nworkload = \"gemm\"\n" << std::string(kMaxConfigBytes, '#') << "\n";
  CHECK(load_error(big) == big + ": the file is 1048610 bytes; a config may hold at most 1048576 bytes (1 MiB)");
  const std::string fits = dir + "/fits.toml";
  std::ofstream(fits) << "[[experiment]]\nworkload = \"gemm\"\n#" << std::string(kMaxConfigBytes - 35, '#') << "\n";
  CHECK(std::filesystem::file_size(fits) == kMaxConfigBytes);
  CHECK(load_error(fits) == "no error");
  std::filesystem::remove_all(dir);
  CHECK(error_of(std::string(kMaxConfigBytes + 1, '#')) ==
        "exp.toml: the text is 1048577 bytes; a config may hold at most 1048576 bytes (1 MiB)");
}

TEST_CASE("experiment names are text: no control characters, valid UTF-8", "[config][names]") {
  auto named = [](const std::string& toml_name) {
    return error_of("[[experiment]]\nname = " + toml_name + "\nworkload = \"gemm\"\n");
  };
  // The issue's pair: equal up to a NUL, they would be one name 'a' in the report.
  CHECK(error_of("[[experiment]]\nname = \"a\\u0000x\"\nworkload = \"gemm\"\n"
                 "[[experiment]]\nname = \"a\\u0000y\"\nworkload = \"gemm\"\n") ==
        "exp.toml:2:8: experiment #1: key 'name' must be text without control characters, got \"a\\x00x\": a control "
        "character (U+0000) at byte 2\n"
        "exp.toml:5:8: experiment #2: key 'name' must be text without control characters, got \"a\\x00y\": a control "
        "character (U+0000) at byte 2");
  CHECK(named("\"\\u001b[31mred\"") == "exp.toml:2:8: experiment #1: key 'name' must be text without control "
                                       "characters, got \"\\x1b[31mred\": a control character (U+001B) at byte 1");
  CHECK(named("\"a\\rb\"").find("got \"a\\x0db\": a control character (U+000D) at byte 2") != std::string::npos);
  CHECK(named("\"a\\tb\"").find("a control character (U+0009) at byte 2") != std::string::npos);
  CHECK(named("\"a\\u007f\"").find("a control character (U+007F) at byte 2") != std::string::npos);
  CHECK(named("\"a\\u009b[2J\"").find("got \"a\\u009b[2J\": a control character (U+009B) at byte 2") !=
        std::string::npos);
  CHECK(named("\"\"\"a\nb\"\"\"").find("a control character (U+000A) at byte 2") != std::string::npos);
  // Bytes that are not UTF-8 never reach the check: the TOML parser refuses them, naming the line.
  CHECK(named("\"a\xff\"") == "exp.toml:2:9: TOML syntax error: Encountered invalid utf-8 sequence");
  CHECK(parse("[[experiment]]\nname = \"gemm caf\xc3\xa9 \xe2\x9c\x93\"\nworkload = \"gemm\"\n").experiments[0].name ==
        "gemm caf\xc3\xa9 \xe2\x9c\x93");
  CHECK(error_of(kIssueExample, {"gemm-512.name=\"x\\u001b\""}) ==
        "--set gemm-512.name=\"x\\u001b\": experiment #1: key 'name' must be text without control characters, got "
        "\"x\\x1b\": a control character (U+001B) at byte 2");
}
