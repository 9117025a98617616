// Benchmark (not a test): does the harness cost anything, and how do two
// ranks scale? Prints ratios against baselines measured in the same run:
//   1. harness GEMM throughput / a bare cblas loop of the same size and
//      threads (rank 0 alone, interleaved rounds, medians);
//   2. serial vs parallel speedup over all ranks of the job.
// Run: mpirun -np 2 build/bench/harness_bench [--size 512] [--ops 4] [--reps 15]
#include <cblas.h>
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <random>

#include "comm/clock_sync.hpp"
#include "comm/mpi_communicator.hpp"
#include "core/clock.hpp"
#include "core/config.hpp"
#include "core/plan.hpp"
#include "core/stats.hpp"
#include "device/cpu_device.hpp"
#include "report/report.hpp"
#include "runner/runner.hpp"
#include "workloads/workload.hpp"

extern "C" void openblas_set_num_threads(int);

using namespace gpuscale;

namespace {

Case make_case(int size, int ops, int reps, int threads, const std::string& mode) {
  const std::string toml = "[[experiment]]\nname = \"bench\"\nworkload = \"gemm\"\nsize = " + std::to_string(size) +
                           "\ndtype = \"fp64\"\nops = " + std::to_string(ops) + "\nwarmup = 1\nreps = " +
                           std::to_string(reps) + "\nthreads = " + std::to_string(threads) + "\nmodes = [\"" + mode +
                           "\"]\n";
  return expand(parse_config(toml, "bench", {}, workload_schemas())).at(0);
}

// The baseline: the same multiplications with nothing around them.
std::vector<double> bare_loop(int n, int ops, int reps, int threads) {
  openblas_set_num_threads(threads);
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> d(-1, 1);
  std::vector<double> a(static_cast<std::size_t>(n) * n), b(a.size()), c(a.size());
  for (auto& x : a) x = d(rng);
  for (auto& x : b) x = d(rng);
  std::vector<double> t;
  for (int r = -1; r < reps; ++r) {  // one warm-up
    const double t0 = clock_now();
    for (int i = 0; i < ops; ++i) {
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a.data(), n, b.data(), n, 0.0, c.data(), n);
    }
    if (r >= 0) t.push_back(clock_now() - t0);
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gpuscale harness benchmark: harness vs bare cblas, and serial vs parallel speedup"};
  int size = 512, ops = 4, reps = 15, threads = 1, rounds = 4;
  app.add_option("--size", size, "matrix size (m = n = k)");
  app.add_option("--ops", ops, "matmuls per sample");
  app.add_option("--reps", reps, "samples per round");
  app.add_option("--rounds", rounds, "interleaved rounds of bare and harness");
  app.add_option("--threads", threads, "BLAS threads");
  CLI11_PARSE(app, argc, argv);

  MPI_Init(&argc, &argv);
  int status = 0;
  {
    MpiCommunicator world(MPI_COMM_WORLD);
    const double flops = 2.0 * size * size * size * ops;
    if (world.rank() == 0) {
      // Rank 0 alone; the others wait without spinning.
      MpiCommunicator self(MPI_COMM_SELF);
      CpuDevice dev;
      CommonClock clock(self);
      Runner runner(self, dev, nullptr, clock, Backend::cpu, 42);
      const Case c = make_case(size, ops, reps, threads, "serial");
      std::vector<double> bare, harness;
      for (int r = 0; r < rounds; ++r) {
        const auto b = bare_loop(size, ops, reps, threads);
        bare.insert(bare.end(), b.begin(), b.end());
        const CaseRecord rec = runner.run(c);
        harness.insert(harness.end(), rec.device_time_s.begin(), rec.device_time_s.end());
      }
      const double mb = median(bare), mh = median(harness);
      std::printf("gemm %d fp64, %d thread(s), %d ops/sample, %zu samples each (%d interleaved rounds)\n", size,
                  threads, ops, bare.size(), rounds);
      std::printf("  bare cblas loop   median %s  %.2f GFLOP/s\n", format_seconds(mb).c_str(), flops / mb / 1e9);
      std::printf("  harness (Runner)  median %s  %.2f GFLOP/s\n", format_seconds(mh).c_str(), flops / mh / 1e9);
      std::printf("  harness / bare throughput: %.3f\n", mb / mh);
      std::fflush(stdout);
    }
    world.idle_barrier();

    CpuDevice dev;
    CommonClock clock(world);
    Runner runner(world, dev, nullptr, clock, Backend::cpu, 42);
    RunRecord run;
    run.cases.push_back(runner.run(make_case(size, ops, reps, threads, "serial")));
    run.cases.push_back(runner.run(make_case(size, ops, reps, threads, "parallel")));
    if (world.rank() == 0) {
      run.cases[1].index = 1;
      const auto rows = build_report(run);
      if (!rows[1].speedup) {
        std::printf("no speedup computed\n");
        status = 1;
      } else {
        std::printf("serial vs parallel at %d rank(s): serial median %s, parallel median %s, speedup %.2f, "
                    "efficiency %.0f%%\n",
                    world.size(), format_seconds(rows[0].median_s).c_str(), format_seconds(rows[1].median_s).c_str(),
                    *rows[1].speedup, *rows[1].efficiency * 100);
      }
    }
  }
  MPI_Finalize();
  return status;
}
