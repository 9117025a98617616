// Benchmark (not a test): does the harness cost anything, and how do two
// ranks scale? Prints ratios against baselines measured in the same run:
//   1. harness GEMM throughput / a bare cblas loop of the same size and
//      threads (rank 0 alone, interleaved rounds, medians), held to
//      0.95-1.05 both ways; the bare loop leaves out samples in which it
//      waited for a core that other work held;
//   2. serial vs parallel speedup over all ranks of the job.
// Run: mpirun -np 2 build/bench/harness_bench [--size 512] [--ops 4] [--reps 15]
#include <cblas.h>
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
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

extern "C" void openblas_set_num_threads(int);

using namespace gpuscale;

namespace {

constexpr double kLow = 0.95, kHigh = 1.05;
// A bare sample in which this thread waited for a core this share of its time or more is left out; with more than a
// quarter left out, the ratio is not judged (the core was busy with other work during the rounds, and the harness's
// samples, which cannot be told apart from outside the runner, then hold more of it than a median ignores).
constexpr double kDisturbed = 0.05;
constexpr int kNotJudged = 3;  // exit status: not judged (the core was busy), nothing outside the target

// The words after harness/bare: none inside the target, else the direction and what it means.
std::string verdict(double ratio) {
  if (ratio > kHigh) return " ABOVE target: the harness is faster than the bare loop: one of them times something else";
  if (ratio < kLow) return " BELOW target: the harness is slower than the bare loop: it costs time";
  return "";
}

// Seconds this thread has waited for a core while runnable (the second field of its schedstat; 0 where none).
double core_wait_s() {
  std::ifstream in("/proc/thread-self/schedstat");
  unsigned long long run = 0, wait = 0;
  if (!(in >> run >> wait)) return 0;
  return static_cast<double>(wait) * 1e-9;
}

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

// The bare loop's sample times: all of them, and those in which this thread did not wait for a core.
struct BareSamples {
  std::vector<double> all, kept;
};

// The baseline: the same multiplications with nothing around them.
void bare_loop(const Settings& s, BareSamples& out) {
  const int n = s.size;
  openblas_set_num_threads(s.threads);
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> d(-1, 1);
  std::vector<double> a(static_cast<std::size_t>(n) * n), b(a.size()), c(a.size());
  for (auto& x : a) x = d(rng);
  for (auto& x : b) x = d(rng);
  for (int r = -1; r < s.reps; ++r) {  // one warm-up
    const double w0 = core_wait_s();
    const double t0 = clock_now();
    for (int i = 0; i < s.ops; ++i) {
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a.data(), n, b.data(), n, 0.0, c.data(), n);
    }
    const double t = clock_now() - t0;
    if (r < 0) continue;
    out.all.push_back(t);
    if (core_wait_s() - w0 < kDisturbed * t) out.kept.push_back(t);
  }
}

// A sample's median time and its GFLOP/s, or dashes where there is none.
std::string rate(double t, double flops) {
  if (!(t > 0)) return "-  - GFLOP/s";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s  %.2f GFLOP/s", format_seconds(t).c_str(), flops / t / 1e9);
  return buf;
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
  std::printf("  host readings of a case: %s (median of %d), %.3f%% of its %d samples%s\n", format_seconds(cost).c_str(),
              kPairs, 100 * share, reps, share < 0.01 ? ", under 1%" : ": ABOVE 1%");
}

// Rank 0 alone: bare and harness in interleaved rounds, the medians and the verdict; returns the exit status.
int harness_vs_bare(const Settings& s) {
  MpiCommunicator self(MPI_COMM_SELF);
  CpuDevice dev;
  CommonClock clock(self);
  Runner runner(self, dev, nullptr, clock, Backend::cpu, 42);
  const Case c = make_case(s.size, s.ops, s.reps, s.threads, "serial");
  BareSamples bare;
  std::vector<double> harness;
  for (int r = 0; r < s.rounds; ++r) {
    bare_loop(s, bare);
    const CaseRecord rec = runner.run(c);
    harness.insert(harness.end(), rec.device_time_s.begin(), rec.device_time_s.end());
  }
  const double flops = 2.0 * s.size * s.size * s.size * s.ops;
  const double mb = bare.kept.empty() ? NAN : median(bare.kept), mh = median(harness);
  std::printf("gemm %d fp64, %d thread(s), %d ops/sample, %zu samples each (%d interleaved rounds)\n", s.size,
              s.threads, s.ops, bare.all.size(), s.rounds);
  std::printf("  bare cblas loop   median %s (%zu/%zu samples kept: waited for a core under 5%%; all: %s)\n",
              rate(mb, flops).c_str(), bare.kept.size(), bare.all.size(), format_seconds(median(bare.all)).c_str());
  std::printf("  harness (Runner)  median %s\n", rate(mh, flops).c_str());
  host_readings_cost(s.reps, mh);
  if (4 * (bare.all.size() - bare.kept.size()) > bare.all.size()) {
    std::printf("  harness / bare throughput: not judged: other work held the core (%zu of %zu bare samples waited "
                "for it 5%% of the time or more)\n",
                bare.all.size() - bare.kept.size(), bare.all.size());
    return kNotJudged;
  }
  const double ratio = mb / mh;
  std::printf("  harness / bare throughput: %.3f", ratio);
  const std::string v = verdict(ratio);
  std::printf("%s\n", v.empty() ? "; target 0.95-1.05 met" : v.c_str());
  return v.empty() ? 0 : 1;
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
    "harness costs time) or no speedup was computed; 3 when it is not judged: in more than a quarter of the bare "
    "loop's samples rank 0 waited for a core that other work held.";

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
  double judge = 0;
  app.add_option("--judge", judge, "print the verdict on harness/bare = RATIO and exit with its status; measures "
                                   "nothing (no MPI)")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  if (judge > 0) {
    const std::string v = verdict(judge);
    std::printf("harness/bare %.3f:%s\n", judge, v.empty() ? " inside target 0.95-1.05" : v.c_str());
    return v.empty() ? 0 : 1;
  }

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
