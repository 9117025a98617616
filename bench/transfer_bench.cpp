// Benchmark (not a test): does the harness cost time on transfers over MPI?
// For each op and size, the harness's collective case (Runner, CPU stream,
// MPI data plane, parallel mode) against a bare loop of the same MPI call on
// MPI_COMM_WORLD, as Intel MPI Benchmarks calls it, with the same size, dtype
// and ops per sample, in the same process: interleaved rounds, medians of
// per-op time, and the ratio harness / bare bandwidth, held to 0.95-1.05 both
// ways. Time a rank spent waiting for a core that other work held is no
// operation's: both sides leave out the samples in which a rank waited for
// one 5% of the time or more (bare: its loop's thread; harness: the stream's
// worker, the sample's core_wait), and a row with fewer than 5 samples
// left on a side is not judged (bench_verdict.hpp).
// Run: mpirun -np 2 build/bench/transfer_bench [--sizes 8,65536,4194304,67108864]
//      [--ops allreduce,allgather,reduce_scatter,broadcast,reduce,alltoall,sendrecv]
//      [--iters 0] [--reps 5] [--rounds 8] [--thread gpuscale|serialized|multiple]
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "app/run_metadata.hpp"
#include "comm/clock_sync.hpp"
#include "comm/comm_choice.hpp"
#include "comm/mpi_check.hpp"
#include "comm/mpi_communicator.hpp"
#include "comm/mpi_library.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "core/metrics.hpp"
#include "core/plan.hpp"
#include "core/stats.hpp"
#include "device/cpu_device.hpp"
#include "report/report.hpp"
#include "runner/runner.hpp"
#include "workloads/collective.hpp"
#include "workloads/collective_pattern.hpp"
#include "workloads/workload.hpp"

#include "bench_verdict.hpp"

using namespace gpuscale;
using namespace gpuscale::bench;

namespace {

constexpr int kWarmup = 2;  // untimed samples per round, both sides

// Ops per sample when --iters is 0: enough that a sample moves 16 MiB, at
// most 10000, at least 1 (8 B: 10000, 64 KiB: 256, 4 MiB: 4, 64 MiB: 1), so
// that no sample is much shorter than a millisecond here (8 B operations take
// 0.1-0.3 us between two ranks of this machine): a sample of a few operations
// of a microsecond is as short as the clock's and the scheduler's noise.
int iters_for(long long bytes) {
  constexpr long long kSampleBytes = 16ll << 20, kMaxIters = 10000;
  return static_cast<int>(std::clamp(kSampleBytes / bytes, 1ll, kMaxIters));
}

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

// One operation as IMB-MPI1 makes it (root kCollRoot where there is one; IMB moves the root from one call to the
// next, the harness keeps it): the call alone, on the two buffers of the op's shape, n elements per part.
void bare_op(CollOp op, const float* send, float* recv, int n, int rank, int size) {
  const MPI_Comm w = MPI_COMM_WORLD;
  switch (op) {
    case CollOp::allreduce: GPUSCALE_MPI(MPI_Allreduce(send, recv, n, MPI_FLOAT, MPI_SUM, w)); return;
    case CollOp::allgather: GPUSCALE_MPI(MPI_Allgather(send, n, MPI_FLOAT, recv, n, MPI_FLOAT, w)); return;
    case CollOp::reduce_scatter:
      GPUSCALE_MPI(MPI_Reduce_scatter_block(send, recv, n, MPI_FLOAT, MPI_SUM, w));
      return;
    case CollOp::broadcast: GPUSCALE_MPI(MPI_Bcast(recv, n, MPI_FLOAT, kCollRoot, w)); return;  // one buffer
    case CollOp::reduce: GPUSCALE_MPI(MPI_Reduce(send, recv, n, MPI_FLOAT, MPI_SUM, kCollRoot, w)); return;
    case CollOp::alltoall: GPUSCALE_MPI(MPI_Alltoall(send, n, MPI_FLOAT, recv, n, MPI_FLOAT, w)); return;
    case CollOp::sendrecv:
    case CollOp::pairs:
      GPUSCALE_MPI(MPI_Sendrecv(send, n, MPI_FLOAT, (rank + 1) % size, 0, recv, n, MPI_FLOAT, (rank - 1 + size) % size,
                                0, w, MPI_STATUS_IGNORE));
      return;
  }
}

// The baseline: the same operations straight on MPI_COMM_WORLD, a barrier before each sample as in parallel mode,
// each rank reading how long it waited for a core meanwhile (its schedstat). Rank 0: the round's samples, per-op
// seconds (mean over ranks), all and undisturbed.
Samples bare_loop(CollOp op, const CollShape& s, int iters, int reps) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (s.send_count > static_cast<std::size_t>(INT_MAX) || s.recv_count > static_cast<std::size_t>(INT_MAX)) {
    throw RuntimeError("a transfer larger than MPI's int count");
  }
  const auto send = floats(s.send_count, 1.0f), recv = floats(s.recv_count, 0.0f);
  const int n = static_cast<int>(s.op_count);
  std::vector<double> t(reps), wait(reps);
  for (int r = -kWarmup; r < reps; ++r) {
    GPUSCALE_MPI(MPI_Barrier(MPI_COMM_WORLD));
    const double w0 = thread_wait_s();
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) bare_op(op, send.get(), recv.get(), n, rank, size);
    const double t1 = MPI_Wtime();
    if (r < 0) continue;
    t[r] = t1 - t0;
    wait[r] = thread_wait_s() - w0;
  }
  std::vector<double> all_t(rank == 0 ? t.size() * size : 0), all_wait(all_t.size());
  GPUSCALE_MPI(MPI_Gather(t.data(), reps, MPI_DOUBLE, all_t.data(), reps, MPI_DOUBLE, 0, MPI_COMM_WORLD));
  GPUSCALE_MPI(MPI_Gather(wait.data(), reps, MPI_DOUBLE, all_wait.data(), reps, MPI_DOUBLE, 0, MPI_COMM_WORLD));
  return rank == 0 ? keep_undisturbed(all_t, all_wait, size, reps, iters) : Samples{};
}

std::string size_label(long long b) {
  if (b % (1 << 20) == 0) return std::to_string(b >> 20) + " MiB";
  if (b % (1 << 10) == 0) return std::to_string(b >> 10) + " KiB";
  return std::to_string(b) + " B";
}

struct Settings {
  int iters = 0;  // 0: iters_for(bytes)
  int reps = 5, rounds = 8;  // short rounds: a burst of other work on the machine hits both sides alike
};

// One op and size, both sides (on rank 0). measured where both ran and the harness verified; judged where each side
// kept enough undisturbed samples (why_not_judged).
struct Row {
  std::string what;
  Samples bare, harness;  // per-op seconds
  double ratio = 0;
  bool measured = false, judged = false, failed = false;
};

// A time and its bandwidth, or a dash where there is none.
std::string time_and_rate(double t, double op_bytes) {
  if (!(t > 0)) return "        -           - GB/s";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%9s %7.3f GB/s", format_seconds(t).c_str(), op_bytes / t / 1e9);
  return buf;
}

// A side's median of its kept samples and their count, e.g. "1.23 ms 13.6 GB/s (38/40 kept, all 1.25 ms)".
std::string side(const Samples& s, double op_bytes) {
  const double kept = s.kept.empty() ? NAN : median(s.kept);
  return time_and_rate(kept, op_bytes) + " (" + std::to_string(s.kept.size()) + "/" + std::to_string(s.all.size()) +
         " kept, all " + format_seconds(median(s.all)) + ")";
}

void print_row(Row& row, int iters, double op_bytes) {
  // Harness bandwidth over bare bandwidth, of the undisturbed samples, and its 95 % interval.
  const Ratio r = ratio_of(row.bare, row.harness);
  const std::string why = why_not_judged(row.bare, row.harness, r);
  row.judged = why.empty();
  row.ratio = r.value;
  std::string ratio = r.value > 0 ? three_places(r.value) : "-";
  if (r.interval) ratio += " (" + three_places(r.interval->lo) + "-" + three_places(r.interval->hi) + ")";
  std::printf("%-24s x%-6d bare %s, harness %s, harness/bare %s", (row.what + ":").c_str(), iters,
              side(row.bare, op_bytes).c_str(), side(row.harness, op_bytes).c_str(), ratio.c_str());
  if (row.judged) {
    std::printf("%s\n", verdict(row.ratio).c_str());
  } else {
    std::printf(" not judged (%s)\n", why.c_str());
  }
  std::fflush(stdout);
}

Row measure(Runner& runner, const MpiCommunicator& world, const std::string& op_name, long long bytes,
            const Settings& set) {
  const CollOp op = parse_coll_op(op_name);
  const CollShape shape = coll_shape(op, static_cast<std::size_t>(bytes), DType::fp32, world.size());
  const int iters = set.iters > 0 ? set.iters : iters_for(bytes);
  Row row;
  row.what = op_name + " " + size_label(bytes);
  const bool root = world.rank() == 0;
  if (shape.op_count == 0) {  // the harness skips it too; the bare loop would send nothing
    if (root) std::printf("%-24s skipped: less than one fp32 element per rank\n", (row.what + ":").c_str());
    return row;
  }
  const Case c = make_case(op_name, bytes, iters, set.reps);
  for (int r = 0; r < set.rounds; ++r) {
    row.bare.add(bare_loop(op, shape, iters, set.reps));
    const CaseRecord rec = runner.run(c);
    if (!root) continue;  // rank 0 holds the gathered record
    if (rec.status != CaseStatus::ok) {
      std::fprintf(stderr, "%s: harness case %s %s\n", row.what.c_str(), status_name(rec.status),
                   rec.status_reason.c_str());
      row.failed = true;
      continue;  // every rank runs every round: the others do not see this record
    }
    row.harness.add(keep_undisturbed(rec.device_time_s, rec.core_wait_s, rec.ranks, rec.reps, iters));
  }
  row.measured = root && !row.harness.all.empty();
  if (row.measured) print_row(row, iters, shape.op_bytes);
  return row;
}

// The lowest and highest judged ratio and where, and the counts; returns the exit status.
int summarize(const std::vector<Row>& rows) {
  const Row *low = nullptr, *high = nullptr;
  int above = 0, below = 0, failed = 0, unjudged = 0;
  for (const Row& r : rows) {
    failed += r.failed ? 1 : 0;
    if (r.measured && !r.judged) ++unjudged;
    if (r.measured && r.judged) {
      above += r.ratio > kHigh ? 1 : 0;
      below += r.ratio < kLow ? 1 : 0;
      if (!low || r.ratio < low->ratio) low = &r;
      if (!high || r.ratio > high->ratio) high = &r;
    }
  }
  const bool met = above == 0 && below == 0 && failed == 0 && unjudged == 0;
  if (low) {
    std::printf("lowest harness/bare: %.3f (%s), highest %.3f (%s); target %.2f-%.2f %s", low->ratio,
                low->what.c_str(), high->ratio, high->what.c_str(), kLow, kHigh, met ? "met" : "NOT met");
  } else {
    std::printf("lowest harness/bare: none judged");
  }
  if (above + below > 0) std::printf(", %d above and %d below of %zu", above, below, rows.size());
  if (unjudged > 0) std::printf(", %d not judged (each row says why: run it again when the cores are free)", unjudged);
  if (failed > 0) std::printf(", %d failed", failed);
  std::printf("\n");
  if (above + below + failed > 0) return kOutside;
  return unjudged > 0 ? kNotJudged : kMet;
}

int run_all(const std::vector<std::string>& ops, const std::vector<long long>& sizes, const Settings& set,
            int requested, int provided) {
  MpiCommunicator world(MPI_COMM_WORLD);
  CpuDevice dev;
  CommonClock clock(world);
  Groups groups(world, dev, data_comm_factory(CommKind::mpi));
  Runner runner(world, dev, &groups, clock, Backend::cpu, 42);
  if (world.rank() == 0) {
    std::printf("%s, %s asked, %s provided\n", mpi_runs_with().c_str(), mpi_thread_level_name(requested).c_str(),
                mpi_thread_level_name(provided).c_str());
    std::printf("fp32, %d ranks, %d samples per side (%d interleaved rounds), xN: ops per sample; per-op time of a "
                "sample = its time / N, mean over ranks, then the median of the samples kept (those in which no rank "
                "waited for a core 5%% of the time or more: bare, the loop's thread; harness, the stream's worker; "
                "all: of every sample); GB/s = algbw = bytes / time; harness/bare with its 95%% interval%s\n",
                world.size(), set.reps * set.rounds, set.rounds,
                std::isnan(thread_wait_s()) ? "; NO schedstat here: no sample can be left out" : "");
  }
  std::vector<Row> rows;
  for (const std::string& op : ops) {
    for (const long long bytes : sizes) rows.push_back(measure(runner, world, op, bytes, set));
  }
  int status = world.rank() == 0 ? summarize(rows) : 0;
  GPUSCALE_MPI(MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD));
  return status;
}

const char* kExit =
    "Exit status: 0 when every row is judged and its harness/bare is inside 0.95-1.05; 1 when one is outside "
    "(ABOVE: the harness is faster than the bare loop, so one side times something else; BELOW: the harness costs "
    "time) or a harness case fails or does not verify; 3 when none is outside but some are not judged: on a side, "
    "fewer than 5 samples were left in which no rank waited for a core that other work held (5% of the sample or "
    "more).";

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gpuscale transfer benchmark: harness collective vs a bare MPI loop"};
  app.footer(kExit);
  std::vector<long long> sizes{8, 65536, 4194304, 67108864};
  const std::vector<std::string> all_ops{"allreduce", "allgather", "reduce_scatter", "broadcast", "reduce",
                                         "alltoall",  "sendrecv"};
  std::vector<std::string> ops = all_ops;
  Settings set;
  app.add_option("--sizes", sizes, "bytes of one operation (nccl-tests' size)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  app.add_option("--ops", ops, "operations")->delimiter(',')->check(CLI::IsMember(all_ops));
  app.add_option("--iters", set.iters, "operations per sample; 0: by size (16 MiB a sample, 1 to 10000)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--reps", set.reps, "samples per round")->check(CLI::PositiveNumber);
  app.add_option("--rounds", set.rounds, "interleaved rounds of bare and harness")->check(CLI::PositiveNumber);
  std::string thread = "gpuscale";
  app.add_option("--thread", thread, "thread level asked of MPI: gpuscale (what gpuscale run asks: "
                                     "comm/mpi_library.hpp), serialized or multiple")
      ->check(CLI::IsMember({"gpuscale", "serialized", "multiple"}));
  JudgeOptions judge;
  add_judge_options(app, judge);
  CLI11_PARSE(app, argc, argv);
  if (judge.ratio > 0) return judge_only(judge, "transfer_bench");

  int provided = 0;
  // The CPU stream's worker thread makes the harness's MPI calls.
  const int requested = thread == "serialized" ? MPI_THREAD_SERIALIZED
                        : thread == "multiple" ? MPI_THREAD_MULTIPLE
                                               : mpi_thread_level_to_request(mpi_library_version());
  MPI_Init_thread(&argc, &argv, requested, &provided);
  if (provided < MPI_THREAD_SERIALIZED) {
    std::fprintf(stderr, "transfer_bench: MPI provides thread level %d, needs MPI_THREAD_SERIALIZED\n", provided);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int status = 0;
  try {
    status = run_all(ops, sizes, set, requested, provided);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "transfer_bench: error: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);  // the other ranks would hang in their next collective
  }
  MPI_Finalize();
  return status;
}
