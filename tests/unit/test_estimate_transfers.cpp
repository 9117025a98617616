// How the estimate prices transfers and large copies: known rates in, known seconds out; which links the output
// says were assumed; the note on cases that set up GiB per rank; and what calibration measures of them.
#include <catch2/catch.hpp>

#include <string>

#include "core/config.hpp"
#include "core/plan.hpp"
#include "device/cpu_device.hpp"
#include "workloads/calibrate.hpp"
#include "workloads/estimate.hpp"
#include "workloads/workload.hpp"

using namespace gpuscale;

namespace {

std::vector<Case> plan_of(const std::string& toml) {
  return expand(parse_config(toml, "e.toml", {}, workload_schemas()));
}

Case first_case(const std::string& toml) { return plan_of(toml).at(0); }

// CPU rates with round numbers: 10 GB/s and 1 us within a node (4 GB/s past a 32 MiB cache), 1 GB/s and 20 us
// between nodes.
Rates round_rates() {
  Rates r = default_rates(Backend::cpu, CommKind::mpi);
  r.intra = {10e9, 4e9, 1e-6, true, "measured"};
  r.inter = {1e9, 0, 20e-6, false, "not measured, assumed"};
  r.cache_bytes = 32.0 * 1048576;
  return r;
}

// A case's seconds per sample: the difference of 20 and 10 reps, over 10 (the fixed parts cancel).
double per_sample(const std::string& experiment, const JobShape& job, const Rates& r) {
  auto with_reps = [&](int reps) {
    return first_case("[defaults]\nwarmup = 0\nreps = " + std::to_string(reps) + "\n[[experiment]]\n" + experiment);
  };
  return (estimate_case(with_reps(20), job, r, false) - estimate_case(with_reps(10), job, r, false)) / 10;
}

}  // namespace

TEST_CASE("a transfer takes its link's latency per operation plus its bus bytes at the link's rate",
          "[estimate][transfers]") {
  const Rates r = round_rates();
  // 20 operations of 1 MB within a node: 20 x (1 us + 1e6 / 10e9 s) = 2.02 ms.
  CHECK(transfer_seconds(TransferWork{"p2p-bw", 1e6, 1.0, 2, 1, 20}, r) == Approx(20 * (1e-6 + 1e-4)));
  // The bus factor counts: an allreduce of 4 ranks moves 2 x 3/4 of its bytes.
  CHECK(transfer_seconds(TransferWork{"allreduce", 1e6, 1.5, 4, 1, 1}, r) == Approx(1e-6 + 1.5e-4));
  // A group that spans nodes takes the link between them.
  CHECK(transfer_seconds(TransferWork{"p2p-bw", 1e6, 1.0, 2, 2, 20}, r) == Approx(20 * (20e-6 + 1e-3)));
}

TEST_CASE("a message whose two ends overflow the cache moves at the rate past it", "[estimate][transfers]") {
  const Rates r = round_rates();
  const double mib = 1048576;
  // 16 MiB: send and receive buffers fill the 32 MiB cache, no more: the cache's rate.
  CHECK(transfer_seconds(TransferWork{"p2p-bw", 16 * mib, 1.0, 2, 1, 1}, r) == Approx(1e-6 + 16 * mib / 10e9));
  CHECK(transfer_seconds(TransferWork{"p2p-bw", 17 * mib, 1.0, 2, 1, 1}, r) == Approx(1e-6 + 17 * mib / 4e9));
  // No rate past the cache (between nodes, or not measured): one rate at every size.
  CHECK(transfer_seconds(TransferWork{"p2p-bw", 64 * mib, 1.0, 2, 2, 1}, r) == Approx(20e-6 + 64 * mib / 1e9));
  Rates unknown = r;
  unknown.cache_bytes = 0;
  CHECK(transfer_seconds(TransferWork{"p2p-bw", 64 * mib, 1.0, 2, 1, 1}, unknown) == Approx(1e-6 + 64 * mib / 10e9));
}

TEST_CASE("a reduction of 32 MiB or more also touches fresh pages of its temporary buffer in each call",
          "[estimate][transfers]") {
  Rates r = round_rates();
  r.intra.fresh_bytes_s = 2e9;
  const double mib = 1048576;
  const double past = 64 * mib / 4e9;  // its bus bytes past the cache (bus factor 1)
  // An allreduce of 2 ranks sums the half it receives into it; a reduce_scatter all of its input at one rank.
  CHECK(transfer_seconds(TransferWork{"allreduce", 64 * mib, 1.0, 2, 1, 1}, r) == Approx(1e-6 + past + 32 * mib / 2e9));
  CHECK(transfer_seconds(TransferWork{"allreduce", 64 * mib, 1.0, 4, 1, 1}, r) == Approx(1e-6 + past + 48 * mib / 2e9));
  CHECK(transfer_seconds(TransferWork{"reduce_scatter", 64 * mib, 1.0, 2, 1, 1}, r) ==
        Approx(1e-6 + past + 64 * mib / 2e9));
  // Not other operations, not below 32 MiB (the allocator keeps those), not one rank alone, not unmeasured.
  CHECK(transfer_seconds(TransferWork{"broadcast", 64 * mib, 1.0, 2, 1, 1}, r) == Approx(1e-6 + past));
  CHECK(transfer_seconds(TransferWork{"allreduce", 31 * mib, 1.0, 2, 1, 1}, r) == Approx(1e-6 + 31 * mib / 4e9));
  CHECK(reduction_fresh_bytes(TransferWork{"allreduce", 64 * mib, 1.0, 1, 1, 1}) == 0);
  r.intra.fresh_bytes_s = 0;
  CHECK(transfer_seconds(TransferWork{"reduce_scatter", 64 * mib, 1.0, 2, 1, 1}, r) == Approx(1e-6 + past));
}

TEST_CASE("a p2p case's sample is its operations at the link's rates, slower on a busy host only within a node",
          "[estimate][transfers]") {
  Rates r = round_rates();
  const std::string latency = "workload = \"p2p\"\npattern = \"latency\"\nbytes = 1000000\niters = 10\n"
                              "modes = [\"parallel\"]\nscope = ";
  // A message and its echo per iteration: 20 operations of 1 MB, plus the runner's own steps.
  const double quiet = per_sample(latency + "\"intra-node\"\n", JobShape{2, 1, 2}, r);
  CHECK(quiet == Approx(20 * (1e-6 + 1e-4) + r.sample_s));
  const double between = per_sample(latency + "\"inter-node\"\n", JobShape{2, 2, 2}, r);
  CHECK(between == Approx(20 * (20e-6 + 1e-3) + r.sample_s));
  // Others' 2 threads beside 2 ranks on 2 CPUs: the host's copies take twice as long; the network does not.
  r.host = {2, 2, 2};
  CHECK(per_sample(latency + "\"intra-node\"\n", JobShape{2, 1, 2}, r) - r.sample_s ==
        Approx(2 * (quiet - r.sample_s)));
  CHECK(per_sample(latency + "\"inter-node\"\n", JobShape{2, 2, 2}, r) == Approx(between));
}

TEST_CASE("a copy on the CPU past the cache runs at the memory's rate", "[estimate][transfers]") {
  Rates r = round_rates();
  r.stream_bytes_s[kDeviceCopy] = r.stream_bytes_s[kHostPageable] = 20e9;
  r.copy_beyond_cache_bytes_s = 8e9;
  const double mib = 1048576;
  CHECK(r.stream_rate(kDeviceCopy, 8 * mib) == 20e9);  // 16 MiB of source and destination: in the cache
  CHECK(r.stream_rate(kDeviceCopy, 1024 * mib) == 8e9);
  CHECK(r.stream_rate(kHostPageable, 1024 * mib) == 8e9);
  CHECK(r.stream_rate(kPass, 1024 * mib) == r.stream_rate(kPass));  // passes: measured past the cache already
  // A 1 GiB copy, 3 per sample: 3 GiB at 8 GB/s, plus 3 calls and the runner's steps.
  const double s = per_sample("workload = \"copy\"\ndirection = \"d2d\"\nbytes = 1073741824\nops = 3\n"
                              "modes = [\"parallel\"]\n", JobShape{1, 1, 2}, r);
  CHECK(s == Approx(3 * 1024 * mib / 8e9 + 3 * r.copy_call_s + r.sample_s));
  // A GPU's copies do not pass through the host's cache.
  Rates cuda = default_rates(Backend::cuda, CommKind::nccl);
  cuda.cache_bytes = 32 * mib;
  cuda.copy_beyond_cache_bytes_s = 1e9;
  CHECK(cuda.stream_rate(kDeviceCopy, 1024 * mib) == cuda.stream_rate(kDeviceCopy));
}

TEST_CASE("the output names the links the plan's cases use, and says which rates were assumed",
          "[estimate][transfers]") {
  const Rates r = round_rates();
  const auto plan = plan_of("[[experiment]]\nworkload = \"p2p\"\npattern = \"bw\"\nbytes = 1024\n"
                            "scope = [\"intra-node\", \"inter-node\"]\nmodes = [\"parallel\"]\n");
  // On one node the inter-node case is skipped: only the link within the node prices anything.
  const PlanEstimate one = estimate_plan(plan, JobShape{2, 1, 2}, r);
  CHECK(one.intra_used);
  CHECK_FALSE(one.inter_used);
  CHECK(transfers_text(one, r) == "transfers within a node: measured");
  CHECK(assumed_transfers_text(one, r).empty());
  const PlanEstimate two = estimate_plan(plan, JobShape{4, 2, 2}, r);
  CHECK(transfers_text(two, r) == "transfers within a node: measured; transfers between nodes: not measured, assumed");
  CHECK(assumed_transfers_text(two, r) == "transfers between nodes: not measured, assumed");
  // The defaults say what they assume, in numbers.
  CHECK(default_rates(Backend::cpu, CommKind::mpi).inter.text ==
        "not measured, assumed 1.00 GB/s and 30.0 us per operation (MPI defaults)");
  CHECK(default_rates(Backend::cuda, CommKind::nccl).intra.text ==
        "not measured, assumed 100 GB/s and 20.0 us per operation (NCCL defaults)");
  // No transfers, or transfers a fitted model prices: nothing to say.
  const auto gemm = plan_of("[[experiment]]\nworkload = \"gemm\"\nsize = 64\n");
  CHECK(transfers_text(estimate_plan(gemm, JobShape{4, 2, 2}, r), r).empty());
  Rates model = r;
  model.sample_time = [](const Case&, const JobShape&) { return std::optional<double>(1e-3); };
  CHECK(transfers_text(estimate_plan(plan, JobShape{4, 2, 2}, model), model).empty());
}

TEST_CASE("cases that stream memory past the cache on several ranks of a node are named as beyond the estimate",
          "[estimate][transfers]") {
  const Rates r = round_rates();  // a 32 MiB cache
  // A pass over 64 Ki elements moves 1 MiB (a, b and r read, r written), in the cache; over 4 Mi, 64 MiB, past
  // it. Serial: one rank at a time.
  const auto plan = plan_of("[[experiment]]\nworkload = \"elementwise\"\nelements = [65536, 4194304]\n"
                            "dtype = \"fp32\"\nmodes = [\"serial\", \"parallel\"]\n");
  REQUIRE(plan.size() == 4);
  const PlanEstimate e = estimate_plan(plan, JobShape{4, 1, 4}, r);
  CHECK(shared_memory_note(plan, e, JobShape{4, 1, 4}, r) ==
        "1 case(s) stream memory past the 32 MiB cache on 4 ranks of a node at once: the memory's rate is measured "
        "on one rank, and the ranks of a node share its bandwidth, so their samples can take up to 4x longer: not "
        "in the estimate");
  // One rank per node streams as measured.
  for (const JobShape alone : {JobShape{1, 1, 4}, JobShape{2, 2, 4}}) {
    CHECK(shared_memory_note(plan, e, alone, r).empty());
  }
  Rates gpu = r, unknown = r;
  gpu.backend = Backend::cuda;  // each rank its own GPU's memory
  unknown.cache_bytes = 0;      // no cache measured: nothing to say
  for (const Rates& other : {gpu, unknown}) CHECK(shared_memory_note(plan, e, JobShape{4, 1, 4}, other).empty());
}

TEST_CASE("cases that set up a GiB or more per rank beside other ranks of the node are named as beyond the estimate",
          "[estimate][transfers]") {
  const Rates r = round_rates();
  // 512 MiB: source and destination, and on the host the 64 MiB that stages them, 1.06 GiB in all.
  const auto plan = plan_of("[[experiment]]\nworkload = \"copy\"\ndirection = \"d2d\"\n"
                            "bytes = [1048576, 536870912]\nmodes = [\"parallel\"]\n");
  const PlanEstimate e = estimate_plan(plan, JobShape{2, 1, 2}, r);
  CHECK(large_setup_note(plan, e, JobShape{2, 1, 2}, true) ==
        "1 case(s) set up 1 GiB or more of host memory per rank: making inputs is measured on one rank, and 2 ranks "
        "that touch fresh memory at once on one node can take several times longer (page faults do not scale "
        "across ranks): not in the estimate");
  CHECK(large_setup_note(plan, e, JobShape{1, 1, 2}, true).empty());  // one rank: as measured
  CHECK(large_setup_note(plan, e, JobShape{2, 2, 2}, true).empty());  // one rank per node
  CHECK(large_setup_note(plan, e, JobShape{2, 1, 2}, false).empty());  // on a GPU, 64 MiB of it on the host
}

TEST_CASE("calibration prices transfers within a node from the host's copies, where MPI moves them on the CPU",
          "[estimate][transfers]") {
  CpuDevice dev;
  const auto p2p = plan_of("[[experiment]]\nworkload = \"p2p\"\nbytes = 1024\n");
  const Rates defaults = default_rates(Backend::cpu, CommKind::mpi);
  const Rates r = calibrate(dev, p2p, defaults, 0.2);
  CHECK(r.intra.bytes_s == r.stream_rate(kDeviceCopy) / 2);  // copied into shared memory and out
  CHECK(r.intra.beyond_cache_bytes_s == r.copy_beyond_cache_bytes_s / 2);  // past the cache: the rate there
  CHECK_THAT(r.intra.text, Catch::StartsWith("measured, "));
  // Either the hand-off was timed, or (a busy host) the text says it was not, keeps the default, and the link
  // counts as assumed.
  if (r.intra.measured) {
    CHECK(r.intra.op_s > 0);
    CHECK_THAT(r.intra.text, Catch::Contains("us per operation (a hand-off between two threads)"));
  } else {
    CHECK(r.intra.op_s == defaults.intra.op_s);
    CHECK_THAT(r.intra.text, Catch::Contains("per operation not measured (two threads could not take turns"));
  }
  CHECK(r.intra.fresh_bytes_s == 0);  // no reduction of 32 MiB or more: no fresh pages measured
  CHECK_FALSE(r.inter.measured);  // nothing crosses nodes before the job runs
  CHECK(r.inter.text == defaults.inter.text);
  // NCCL's links, and a plan without transfers: nothing measured.
  const Rates nccl = default_rates(Backend::cpu, CommKind::nccl);
  CHECK(calibrate(dev, p2p, nccl, 0.2).intra.text == nccl.intra.text);
  // A reduction that allocates 32 MiB or more in each call: the rate of fresh pages too, and the text says so.
  const auto big = plan_of("[[experiment]]\nworkload = \"collective\"\nop = \"allreduce\"\nbytes = 33554432\n");
  const Rates fresh = calibrate(dev, big, defaults, 0.2);
  CHECK(fresh.intra.fresh_bytes_s > 0);
  CHECK_THAT(fresh.intra.text, Catch::Contains("a reduction's temporary buffer of 32 MiB or more: fresh pages at "));
  const auto gemm = plan_of("[[experiment]]\nworkload = \"gemm\"\nsize = 64\n");
  CHECK(calibrate(dev, gemm, defaults, 0.2).intra.text == defaults.intra.text);
}

TEST_CASE("on a busy host the estimate says it leaves out the waits of transfers for both ranks' turns",
          "[estimate][transfers]") {
  Rates r = round_rates();
  const auto p2p = plan_of("[[experiment]]\nworkload = \"p2p\"\nbytes = 1024\nmodes = [\"parallel\"]\n");
  const JobShape job{2, 1, 2};
  CHECK(busy_transfers_note(estimate_plan(p2p, job, r), r).empty());  // a quiet host
  r.host = {6, 2, 2};
  CHECK(busy_transfers_note(estimate_plan(p2p, job, r), r) ==
        "on a busy host each transfer between ranks, and each barrier, waits until both ranks have a CPU; the "
        "estimate counts the host's share of the CPUs for the work and the data moved, not those waits: plans of "
        "many small transfers can take several times longer");
  const auto gemm = plan_of("[[experiment]]\nworkload = \"gemm\"\nsize = 64\n");
  CHECK(busy_transfers_note(estimate_plan(gemm, job, r), r).empty());  // no transfers
  Rates cuda = default_rates(Backend::cuda, CommKind::nccl);
  cuda.host = r.host;
  CHECK(busy_transfers_note(estimate_plan(p2p, job, cuda), cuda).empty());  // a GPU's transfers need no host CPU
}
