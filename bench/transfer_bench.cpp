// Benchmark (not a test): does the harness cost bandwidth on transfers over
// MPI? For each op and size, the harness's collective case (Runner, CPU
// stream, MPI data plane, parallel mode) against a bare MPI loop of the same
// op, size, dtype and iters in the same process: interleaved rounds, medians
// of per-op time, and the ratio harness / bare bandwidth (target >= 0.95).
// Run: mpirun -np 2 build/bench/transfer_bench [--sizes 4194304,67108864]
//      [--ops sendrecv,allreduce] [--iters 5] [--reps 10] [--rounds 4]
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "comm/clock_sync.hpp"
#include "comm/comm_choice.hpp"
#include "comm/mpi_check.hpp"
#include "comm/mpi_communicator.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "core/metrics.hpp"
#include "core/plan.hpp"
#include "core/stats.hpp"
#include "device/cpu_device.hpp"
#include "report/report.hpp"
#include "runner/runner.hpp"
#include "workloads/collective_pattern.hpp"
#include "workloads/workload.hpp"

using namespace gpuscale;

namespace {

constexpr int kWarmup = 2;  // untimed samples per round, both sides

Case make_case(const std::string& op, long long bytes, int iters, int reps) {
  const std::string toml = "[[experiment]]\nname = \"bench\"\nworkload = \"collective\"\nop = \"" + op +
                           "\"\ndtype = \"fp32\"\nbytes = " + std::to_string(bytes) + "\niters = " +
                           std::to_string(iters) + "\nscope = \"world\"\nwarmup = " + std::to_string(kWarmup) +
                           "\nreps = " + std::to_string(reps) + "\nmodes = [\"parallel\"]\n";
  return expand(parse_config(toml, "bench", {}, workload_schemas())).at(0);
}

// 64-byte aligned like the CPU device's buffers: alignment changes memcpy speed, and must not differ between the sides.
std::unique_ptr<float, void (*)(void*)> floats(std::size_t n, float v) {
  auto* p = static_cast<float*>(std::aligned_alloc(64, std::max<std::size_t>(64, (n * sizeof(float) + 63) / 64 * 64)));
  if (!p) throw std::bad_alloc();
  std::fill(p, p + n, v);
  return {p, std::free};
}

// The baseline: the same operations straight on MPI_COMM_WORLD, a barrier
// before each sample as in parallel mode. Per-op seconds of each sample,
// the mean over ranks (on rank 0; elsewhere empty).
std::vector<double> bare_loop(CollOp op, const CollShape& s, int iters, int reps) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (s.op_count > static_cast<std::size_t>(INT_MAX)) throw RuntimeError("a transfer larger than MPI's int count");
  const auto send = floats(s.send_count, 1.0f), recv = floats(s.recv_count, 0.0f);
  const int n = static_cast<int>(s.op_count);
  std::vector<double> t(reps);
  for (int r = -kWarmup; r < reps; ++r) {
    GPUSCALE_MPI(MPI_Barrier(MPI_COMM_WORLD));
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
      if (op == CollOp::sendrecv) {
        GPUSCALE_MPI(MPI_Sendrecv(send.get(), n, MPI_FLOAT, (rank + 1) % size, 0, recv.get(), n, MPI_FLOAT,
                                  (rank - 1 + size) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      } else {
        GPUSCALE_MPI(MPI_Allreduce(send.get(), recv.get(), n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
      }
    }
    if (r >= 0) t[r] = (MPI_Wtime() - t0) / iters;
  }
  std::vector<double> sum(rank == 0 ? reps : 0);
  GPUSCALE_MPI(MPI_Reduce(t.data(), sum.data(), reps, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD));
  for (auto& x : sum) x /= size;
  return sum;
}

std::string size_label(long long b) {
  if (b % (1 << 20) == 0) return std::to_string(b >> 20) + " MiB";
  if (b % (1 << 10) == 0) return std::to_string(b >> 10) + " KiB";
  return std::to_string(b) + " B";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gpuscale transfer benchmark: harness collective vs a bare MPI loop"};
  std::vector<long long> sizes{4194304, 67108864};
  std::vector<std::string> ops{"sendrecv", "allreduce"};
  int iters = 5, reps = 10, rounds = 4;
  app.add_option("--sizes", sizes, "bytes of one operation")->delimiter(',')->check(CLI::PositiveNumber);
  app.add_option("--ops", ops, "operations")->delimiter(',')->check(CLI::IsMember({"sendrecv", "allreduce"}));
  app.add_option("--iters", iters, "operations per sample")->check(CLI::PositiveNumber);
  app.add_option("--reps", reps, "samples per round")->check(CLI::PositiveNumber);
  app.add_option("--rounds", rounds, "interleaved rounds of bare and harness")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  int provided = 0;
  // The CPU stream's worker thread makes the harness's MPI calls.
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  if (provided < MPI_THREAD_SERIALIZED) {
    std::fprintf(stderr, "transfer_bench: MPI provides thread level %d, needs MPI_THREAD_SERIALIZED\n", provided);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int status = 0;
  try {
    MpiCommunicator world(MPI_COMM_WORLD);
    CpuDevice dev;
    CommonClock clock(world);
    Groups groups(world, dev, data_comm_factory("mpi"));
    Runner runner(world, dev, &groups, clock, "cpu", 42);
    if (world.rank() == 0) {
      std::printf("fp32, %d ranks, %d ops/sample, %d samples per side (%d interleaved rounds); per-op time of a "
                  "sample = mean over ranks, then the median; algbw = bytes / time\n",
                  world.size(), iters, reps * rounds, rounds);
    }
    for (const std::string& op_name : ops) {
      const CollOp op = parse_coll_op(op_name);
      for (const long long bytes : sizes) {
        const CollShape shape = coll_shape(op, static_cast<std::size_t>(bytes), DType::fp32, world.size());
        const Case c = make_case(op_name, bytes, iters, reps);
        std::vector<double> bare, harness;
        for (int r = 0; r < rounds; ++r) {
          const auto b = bare_loop(op, shape, iters, reps);
          bare.insert(bare.end(), b.begin(), b.end());
          const CaseRecord rec = runner.run(c);
          if (rec.status != "ok") {
            if (world.rank() == 0) {
              std::fprintf(stderr, "%s %s: harness case %s %s\n", op_name.c_str(), size_label(bytes).c_str(),
                           rec.status.c_str(), rec.status_reason.c_str());
            }
            status = 1;
            continue;
          }
          if (world.rank() == 0) {
            const auto h = mean_op_times(rec.device_time_s, rec.ranks, rec.reps, iters);
            harness.insert(harness.end(), h.begin(), h.end());
          }
        }
        if (world.rank() == 0 && !harness.empty()) {
          const double tb = median(bare), th = median(harness);
          const double bwb = shape.op_bytes / tb / 1e9, bwh = shape.op_bytes / th / 1e9;
          std::printf("%s %s: bare %s %.2f GB/s, harness %s %.2f GB/s, harness/bare %.3f (%s target 0.95)\n",
                      op_name.c_str(), size_label(bytes).c_str(), format_seconds(tb).c_str(), bwb,
                      format_seconds(th).c_str(), bwh, bwh / bwb, bwh / bwb >= 0.95 ? "meets" : "BELOW");
          std::fflush(stdout);
        }
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "transfer_bench: error: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);  // the other ranks would hang in their next collective
  }
  MPI_Finalize();
  return status;
}
