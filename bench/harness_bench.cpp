// Benchmark (not a test): does the harness cost anything, and how do two
// ranks scale? Prints ratios against baselines measured in the same run:
//   1. harness GEMM throughput / a bare cblas loop of the same size and
//      threads (rank 0 alone, interleaved rounds, medians), held to
//      0.95-1.05 both ways; both sides leave out the samples in which
//      their thread (bare: the loop's; harness: the stream's worker, the
//      sample's core_wait) waited for a core that other work held 5% of the
//      sample or more (bench_verdict.hpp);
//   2. serial vs parallel speedup over all ranks of the job.
// Run: mpirun -np 2 build/bench/harness_bench [--size 512] [--ops 4] [--reps 15]
#include <cblas.h>
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "comm/clock_sync.hpp"
#include "comm/mpi_communicator.hpp"
#include "core/clock.hpp"
#include "core/config.hpp"
#include "core/plan.hpp"
#include "core/stats.hpp"
#include "device/cpu_device.hpp"
#include "report/report.hpp"
#include "runner/host_load.hpp"
#include "runner/runner.hpp"
#include "workloads/workload.hpp"

#include "bench_verdict.hpp"

extern "C" void openblas_set_num_threads(int);

using namespace gpuscale;
using namespace gpuscale::bench;

namespace {

Case make_case(int size, int ops, int reps, int threads, const std::string& mode) {
  const std::string toml = "[[experiment]]\nname = \"bench\"\nworkload = \"gemm\"\nsize = " + std::to_string(size) +
                           "\ndtype = \"fp64\"\nops = " + std::to_string(ops) + "\nwarmup = 1\nreps = " +
                           std::to_string(reps) + "\nthreads = " + std::to_string(threads) + "\nmodes = [\"" + mode +
                           "\"]\n";
  return expand(parse_config(toml, "bench", {}, workload_schemas())).at(0);
}

struct Settings {
  int size = 512, ops = 4, reps = 15, threads = 1, rounds = 4;
};

// The baseline: the same multiplications with nothing around them; each sample's time, and whether this thread
// waited for a core meanwhile.
Samples bare_loop(const Settings& s) {
  const int n = s.size;
  openblas_set_num_threads(s.threads);
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> d(-1, 1);
  std::vector<double> a(static_cast<std::size_t>(n) * n), b(a.size()), c(a.size());
  for (auto& x : a) x = d(rng);
  for (auto& x : b) x = d(rng);
  std::vector<double> t, wait;
  for (int r = -1; r < s.reps; ++r) {  // one warm-up
    const double w0 = thread_wait_s();
    const double t0 = clock_now();
    for (int i = 0; i < s.ops; ++i) {
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a.data(), n, b.data(), n, 0.0, c.data(), n);
    }
    const double t1 = clock_now();
    if (r < 0) continue;
    t.push_back(t1 - t0);
    wait.push_back(thread_wait_s() - w0);
  }
  return keep_undisturbed(t, wait, 1, s.reps, 1);
}

// A side's median kept sample and its GFLOP/s (dashes where none was kept), how many were kept and the median of all.
std::string rate(const Samples& side, double flops) {
  const double t = side.kept.empty() ? NAN : median(side.kept);
  char buf[128] = "-  - GFLOP/s";
  if (t > 0) std::snprintf(buf, sizeof buf, "%s  %.2f GFLOP/s", format_seconds(t).c_str(), flops / t / 1e9);
  return std::string(buf) + " (" + std::to_string(side.kept.size()) + "/" + std::to_string(side.all.size()) +
         " samples kept; all: " + format_seconds(median(side.all)) + ")";
}

// What the host readings of a case (runner/host_load.hpp: two per case and rank, and the table of their
// difference) cost, against the `reps` samples of `sample_s` each that they bracket.
void host_readings_cost(int reps, double sample_s) {
  constexpr int kPairs = 200;
  std::vector<double> each;
  for (int i = 0; i < kPairs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const HostReading a = read_host_load();
    const CaseTable t = host_table(a, read_host_load());
    each.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (t.rows() != 1) std::printf("  host readings: the table has %zu rows\n", t.rows());
  }
  const double cost = median(each), share = cost / (reps * sample_s);
  std::printf("  host readings of a case: %s (median of %d), %.3f%% of its %d samples%s\n",
              format_seconds(cost).c_str(), kPairs, 100 * share, reps, share < 0.01 ? ", under 1%" : ": ABOVE 1%");
}

// What the CPU backend's per-sample core wait costs: one read of the stream thread's schedstat per event, two
// events per sample (the end event's read falls inside the sample's time), against a sample of `sample_s`.
void core_wait_cost(double sample_s) {
  constexpr int kReads = 2000;
  std::vector<double> each;
  for (int i = 0; i < kReads; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const double w = thread_wait_s();
    each.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (std::isnan(w)) break;  // nothing to read here: what it costs then does not matter
  }
  const double cost = median(each), share = 2 * cost / sample_s;
  std::printf("  core wait of a sample: %s a read (median of %zu), 2 reads %.4f%% of a sample%s\n",
              format_seconds(cost).c_str(), each.size(), 100 * share, share < 0.01 ? ", under 1%" : ": ABOVE 1%");
}

// Rank 0 alone: bare and harness in interleaved rounds, the medians and the verdict; returns the exit status.
int harness_vs_bare(const Settings& s) {
  MpiCommunicator self(MPI_COMM_SELF);
  CpuDevice dev;
  CommonClock clock(self);
  Runner runner(self, dev, nullptr, clock, Backend::cpu, 42);
  const Case c = make_case(s.size, s.ops, s.reps, s.threads, "serial");
  Samples bare, harness;
  for (int r = 0; r < s.rounds; ++r) {
    bare.add(bare_loop(s));
    const CaseRecord rec = runner.run(c);
    harness.add(keep_undisturbed(rec.device_time_s, rec.core_wait_s, rec.ranks, rec.reps, 1));
  }
  const double flops = 2.0 * s.size * s.size * s.size * s.ops;
  std::printf("gemm %d fp64, %d thread(s), %d ops/sample, %zu samples each (%d interleaved rounds); median of the "
              "samples kept: those in which the thread that ran them (bare: the loop's; harness: the stream's worker) "
              "waited for a core under 5%% of the time%s\n",
              s.size, s.threads, s.ops, bare.all.size(), s.rounds,
              std::isnan(thread_wait_s()) ? "; NO schedstat here: no sample can be left out" : "");
  std::printf("  bare cblas loop   median %s\n", rate(bare, flops).c_str());
  std::printf("  harness (Runner)  median %s\n", rate(harness, flops).c_str());
  const double mh = median(harness.all);
  host_readings_cost(s.reps, mh);
  core_wait_cost(mh);
  const Ratio r = ratio_of(bare, harness);
  const std::string why = why_not_judged(bare, harness, r);
  std::printf("  harness / bare throughput: ");
  if (r.interval) std::printf("%.3f (%.3f-%.3f, 95%%)", r.value, r.interval->lo, r.interval->hi);
  if (!why.empty()) {
    std::printf("%snot judged (%s)\n", r.interval ? " " : "", why.c_str());
    return kNotJudged;
  }
  const std::string v = verdict(r.value);
  std::printf("%s\n", v.empty() ? "; target 0.95-1.05 met" : v.c_str());
  return v.empty() ? kMet : kOutside;
}

// Every rank: the serial and the parallel case, and (rank 0) the speedup; returns the exit status.
int serial_vs_parallel(const MpiCommunicator& world, const Settings& s) {
  CpuDevice dev;
  CommonClock clock(world);
  Runner runner(world, dev, nullptr, clock, Backend::cpu, 42);
  RunRecord run;
  run.cases.push_back(runner.run(make_case(s.size, s.ops, s.reps, s.threads, "serial")));
  run.cases.push_back(runner.run(make_case(s.size, s.ops, s.reps, s.threads, "parallel")));
  if (world.rank() != 0) return 0;
  run.cases[1].index = 1;
  const auto rows = build_report(run);
  if (!rows[1].speedup) {
    std::printf("no speedup computed\n");
    return 1;
  }
  std::printf("serial vs parallel at %d rank(s): serial median %s, parallel median %s, speedup %.2f, "
              "efficiency %.0f%%\n",
              world.size(), format_seconds(rows[0].median_s).c_str(), format_seconds(rows[1].median_s).c_str(),
              *rows[1].speedup, *rows[1].efficiency * 100);
  return 0;
}

const char* kExit =
    "Exit status: 0 when harness / bare throughput is inside 0.95-1.05 and the speedup was computed; 1 when the ratio "
    "is outside (ABOVE: the harness is faster than the bare loop, so one side times something else; BELOW: the "
    "harness costs time) or no speedup was computed; 3 when it is not judged: on a side, fewer than 5 samples "
    "were left in which its thread did not wait for a core that other work held (5% of the sample or more).";

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gpuscale harness benchmark: harness vs bare cblas, and serial vs parallel speedup"};
  app.footer(kExit);
  Settings s;
  app.add_option("--size", s.size, "matrix size (m = n = k)");
  app.add_option("--ops", s.ops, "matmuls per sample");
  app.add_option("--reps", s.reps, "samples per round");
  app.add_option("--rounds", s.rounds, "interleaved rounds of bare and harness");
  app.add_option("--threads", s.threads, "BLAS threads");
  JudgeOptions judge;
  add_judge_options(app, judge);
  CLI11_PARSE(app, argc, argv);
  if (judge.ratio > 0) return judge_only(judge, "harness_bench");

  MPI_Init(&argc, &argv);
  int status = 0;
  {
    MpiCommunicator world(MPI_COMM_WORLD);
    if (world.rank() == 0) status = harness_vs_bare(s);  // the others wait without spinning
    world.idle_barrier();
    const int speedup = serial_vs_parallel(world, s);
    if (status == 0 || (status == kNotJudged && speedup != 0)) status = speedup;
  }
  MPI_Finalize();
  return status;
}
