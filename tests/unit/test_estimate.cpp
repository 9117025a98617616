// Estimates of a plan's time before it runs: the work each case does on a
// job's shape, the model's arithmetic, the time budget, and calibration.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>
#include <stdexcept>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/plan.hpp"
#include "core/text.hpp"
#include "device/cpu_device.hpp"
#include "workloads/calibrate.hpp"
#include "workloads/estimate.hpp"
#include "workloads/workload.hpp"

using namespace gpuscale;

namespace {

std::vector<Case> plan_of(const std::string& toml) {
  return expand(parse_config(toml, "e.toml", {}, workload_schemas()));
}

Case only_case(const std::string& toml, const std::string& mode = "parallel") {
  for (const auto& c : plan_of(toml)) {
    if (mode_name(c.mode) == mode) return c;
  }
  FAIL("no " << mode << " case");
  return {};
}

}  // namespace

TEST_CASE("device-local work takes one turn per rank in serial and one in parallel", "[estimate]") {
  const std::string toml = "[[experiment]]\nworkload = \"gemm\"\nsize = 128\nops = 3\n";
  const JobShape job{4, 2, 8};
  const CaseWork serial = case_work(only_case(toml, "serial"), job);
  const CaseWork parallel = case_work(only_case(toml, "parallel"), job);
  CHECK(serial.turns == 4);
  CHECK(serial.busy_ranks_per_node == 1);
  CHECK(parallel.turns == 1);
  CHECK(parallel.busy_ranks_per_node == 2);
  REQUIRE(parallel.sample.gemms.size() == 1);
  CHECK(parallel.sample.gemms[0].calls == 3);
  CHECK(parallel.sample.gemms[0].flops_per_call == 2.0 * 128 * 128 * 128);
}

TEST_CASE("every kind of memory traffic has one name and a rate: its own, or a built-in kind's", "[estimate]") {
  const Rates cpu = default_rates(Backend::cpu, CommKind::mpi), cuda = default_rates(Backend::cuda, CommKind::nccl);
  std::set<std::string> names;
  for (const StreamKind& k : stream_kinds()) {
    INFO(k.name);
    CHECK(names.insert(k.name).second);
    CHECK_FALSE(k.what.empty());
    const bool builtin = k.priced_as.empty();
    CHECK(builtin == (cpu.stream_bytes_s.count(k.name) == 1));
    if (!builtin) CHECK(find_stream_kind(k.priced_as).priced_as.empty());  // priced as a built-in kind
    CHECK(cpu.stream_rate(k.name) > 0);
    CHECK(cuda.stream_rate(k.name) > 0);
  }
  CHECK_THROWS_AS(find_stream_kind("pinned"), std::out_of_range);
}

static SampleWork streams_of(const std::vector<StreamWork>& s) {
  SampleWork w;
  for (const auto& x : s) w.add_stream(x.kind, x.bytes, x.calls);
  return w;
}

TEST_CASE("traffic of one kind adds up in one entry, and each kind is priced at its own rate", "[estimate]") {
  const SampleWork w = streams_of({{kPass, 100, 1}, {kDeviceCopy, 50, 2}, {kPass, 300, 3}});
  REQUIRE(w.streams.size() == 2);
  CHECK(w.streams[0].kind == kPass);
  CHECK(w.streams[0].bytes == 400);
  CHECK(w.streams[0].calls == 4);
  CHECK(w.stream_bytes() == 450);
  CHECK(w.stream_calls() == 6);
  SampleWork copies;
  copies.add_copy(CopyKind::d2d, true, 10, 1);
  copies.add_copy(CopyKind::h2d, true, 20, 1);
  copies.add_copy(CopyKind::d2h, false, 30, 1);
  REQUIRE(copies.streams.size() == 3);
  CHECK(copies.streams[0].kind == kDeviceCopy);
  CHECK(copies.streams[1].kind == kHostPinned);
  CHECK(copies.streams[2].kind == kHostPageable);
}

TEST_CASE("a collective's work follows its scope's groups on the job", "[estimate]") {
  const std::string toml = "[[experiment]]\nworkload = \"collective\"\nop = \"allreduce\"\nbytes = 1048576\n"
                           "iters = 2\nscope = [\"intra-node\", \"inter-node\"]\n";
  const auto plan = plan_of(toml);
  const Case* intra = nullptr;
  const Case* inter = nullptr;
  for (const auto& c : plan) {
    if (c.mode != Mode::serial) continue;
    (c.params.get_string("scope") == "intra-node" ? intra : inter) = &c;
  }
  REQUIRE(intra);
  REQUIRE(inter);
  const JobShape two_nodes{8, 2, 8};
  const CaseWork w = case_work(*intra, two_nodes);
  CHECK(w.turns == 2);  // a group per node, one after the other
  CHECK_FALSE(w.sample.across_nodes);
  CHECK(w.sample.transfers == 2);
  CHECK(w.sample.wire_bytes == Approx(2 * 1048576.0 * 2 * 3 / 4));  // busbw's 2(n-1)/n, n = 4
  CHECK(case_work(*inter, two_nodes).sample.across_nodes);
  CHECK(case_work(*inter, JobShape{2, 1, 2}).skipped());  // one node: the case is skipped
}

TEST_CASE("the estimate skips a collective where the run skips it, and only there", "[estimate]") {
  const auto skipped = [](const std::string& keys, const JobShape& job) {
    return case_work(only_case("[[experiment]]\nworkload = \"collective\"\n" + keys), job).skipped();
  };
  // Three nodes pair up in three rounds, one resting in each: the sweep runs.
  CHECK_FALSE(skipped("op = \"pairs\"\nscope = \"node-pairs\"\n", JobShape{3, 3, 2}));
  CHECK(skipped("op = \"pairs\"\nscope = \"node-pairs\"\n", JobShape{2, 1, 2}));
  CHECK(skipped("op = \"pairs\"\n", JobShape{3, 1, 4}));  // a rank without a partner
  // 8 bytes of allgather over 4 ranks: less than one fp32 element each.
  CHECK(skipped("op = \"allgather\"\nbytes = 8\n", JobShape{4, 1, 4}));
  CHECK_FALSE(skipped("op = \"allgather\"\nbytes = 16\n", JobShape{4, 1, 4}));
}

TEST_CASE("the estimate gives each case the reason its run would record for skipping it, and none where it runs",
          "[estimate]") {
  const auto plan = plan_of("[[experiment]]\nname = \"c\"\nworkload = \"collective\"\n"
                            "scope = [\"world\", \"inter-node\"]\nmodes = [\"parallel\"]\n"
                            "[[experiment]]\nname = \"d\"\nworkload = \"distributed_gemm\"\nsize = 48\n"
                            "group_size = [2, 4]\nmodes = [\"parallel\"]\n"
                            "[[experiment]]\nname = \"o\"\nworkload = \"distributed_gemm\"\nsize = 47\n"
                            "modes = [\"parallel\"]\n"
                            "[[experiment]]\nname = \"s\"\nworkload = \"dp_step\"\nscope = \"inter-node\"\n"
                            "modes = [\"parallel\"]\n");
  REQUIRE(plan.size() == 6);
  const PlanEstimate e = estimate_plan(plan, JobShape{2, 1, 2}, default_rates(Backend::cpu, CommKind::mpi));
  REQUIRE(e.skip_reason.size() == plan.size());
  CHECK(e.skip_reason[0].empty());
  CHECK(e.skip_reason[1] == "scope inter-node needs ranks on at least 2 nodes; this job runs on 1 node");
  CHECK(e.skip_reason[2].empty());
  // As the run on 2 ranks records them (tests/mpi/test_distributed_gemm.cpp).
  CHECK(e.skip_reason[3] == "group_size = 4 needs at least 4 ranks; this job has 2");
  CHECK(e.skip_reason[4] == "m = 47 and n = 47 must be multiples of the group's 2 ranks");
  CHECK(e.skip_reason[5] == "scope inter-node needs ranks on at least 2 nodes; this job runs on 1 node");
  const PlanEstimate across = estimate_plan(plan, JobShape{4, 2, 2}, default_rates(Backend::cpu, CommKind::mpi));
  CHECK(across.skip_reason[1].empty());
  CHECK(across.skip_reason[3].empty());
  CHECK(across.skip_reason[4] == "m = 47 and n = 47 must be multiples of the group's 4 ranks");
  CHECK(across.skip_reason[5].empty());
}

TEST_CASE("every workload has an estimate", "[estimate]") {
  for (const WorkloadType* t : workload_registry()) {
    const std::string& name = t->schema().name;
    const auto plan = plan_of("[[experiment]]\nworkload = \"" + name + "\"\n");
    REQUIRE_FALSE(plan.empty());
    const Rates rates = default_rates(Backend::cpu, CommKind::mpi);
    const double s = estimate_case(plan.back(), JobShape{2, 1, 2}, rates, true);
    INFO(name);
    CHECK(std::isfinite(s));
    CHECK(s > rates.case_s);  // some work beyond the fixed cost
  }
}

TEST_CASE("the estimate grows with samples and with ranks sharing cores", "[estimate]") {
  const Rates rates = default_rates(Backend::cpu, CommKind::mpi);
  auto parallel = [](int reps) {
    return only_case("[defaults]\nreps = " + std::to_string(reps) + "\nwarmup = 0\n[[experiment]]\nworkload = "
                     "\"gemm\"\nsize = 256\nops = 4\n");
  };
  const double ten = estimate_case(parallel(10), JobShape{2, 1, 2}, rates, false);
  const double twenty = estimate_case(parallel(20), JobShape{2, 1, 2}, rates, false);
  const double per_sample = twenty - ten;  // the fixed parts cancel
  const GemmRate g = rates.gemm_rate(DType::fp64, GemmImpl::vendor);
  CHECK(per_sample / 10 == Approx(4 * (g.call_s + 2.0 * 256 * 256 * 256 / g.flops_s) + rates.sample_s));
  // 4 ranks on 2 cores: each gets half a core, so the timed part takes twice as long.
  const double crowded = estimate_case(parallel(20), JobShape{4, 1, 2}, rates, false) -
                         estimate_case(parallel(10), JobShape{4, 1, 2}, rates, false);
  CHECK(crowded == Approx(2 * per_sample).epsilon(0.01));
  // Serial on 2 ranks: two turns of the same samples.
  const Case serial = only_case("[defaults]\nreps = 10\nwarmup = 0\n[[experiment]]\nworkload = \"gemm\"\n"
                                "size = 256\nops = 4\n", "serial");
  CHECK(estimate_case(serial, JobShape{2, 1, 2}, rates, false) - ten == Approx(per_sample));
}

TEST_CASE("others' work on a busy host takes its share of the cores, as the estimate assumes it stays", "[estimate]") {
  // Each runnable thread gets an equal share: 2 of ours and 2 of others' on 2 CPUs run at half speed.
  CHECK(HostShare{2, 2, 2}.slowdown(2) == Approx(2));
  CHECK(HostShare{1, 2, 2}.slowdown(1) == Approx(1));   // they fit beside each other
  CHECK(HostShare{3, 2, 2}.slowdown(1) == Approx(2));
  CHECK(HostShare{2, 2, 2}.slowdown(4) == Approx(1.5));  // the job crowds its own cores already: others add theirs
  CHECK(HostShare{6, 0, 0}.slowdown(2) == 1);            // no CPUs counted: nothing assumed
  CHECK(HostShare{0, 2, 2}.slowdown(2) == 1);
  // The kernel spreads others over all the node's CPUs: a rank bound to 1 of 2 with 5 others, 3 threads to a CPU.
  CHECK(HostShare{5, 2, 1}.slowdown(1) == Approx(3));
  // 2 threads bound to 1 CPU already share it; 4 others bring each CPU to 3 threads: 1.5 times longer.
  CHECK(HostShare{4, 2, 1}.slowdown(2) == Approx(1.5));
  CHECK(HostShare{4, 2, 0}.slowdown(2) == Approx(3));  // the job's CPUs unknown: all of the node's
  auto parallel = [](int reps) {
    return only_case("[defaults]\nreps = " + std::to_string(reps) + "\nwarmup = 0\n[[experiment]]\nworkload = "
                     "\"gemm\"\nsize = 256\nops = 4\n");
  };
  const JobShape job{2, 1, 2};
  const Rates quiet = default_rates(Backend::cpu, CommKind::mpi);
  Rates busy = quiet;
  busy.host = {2, 2, 2};
  auto timed = [&](const Rates& r) {  // the samples' part: the fixed parts cancel
    return estimate_case(parallel(20), job, r, false) - estimate_case(parallel(10), job, r, false);
  };
  const double sample = 10 * (quiet.sample_s);  // the runner's own steps, which the cores' share leaves alone
  CHECK(timed(busy) - sample == Approx(2 * (timed(quiet) - sample)).epsilon(0.01));
  // Serial device-local work keeps one thread busy at a time: with 2 others on 2 CPUs it runs at 2/3 speed.
  const Case serial = only_case("[defaults]\nreps = 10\nwarmup = 0\n[[experiment]]\nworkload = \"gemm\"\n"
                                "size = 256\nops = 4\n", "serial");
  CHECK(estimate_case(serial, job, busy, false) > estimate_case(serial, job, quiet, false));
  // The inputs are made on the host: slower beside others' work, on either backend.
  const Case big = only_case("[[experiment]]\nworkload = \"elementwise\"\nelements = 16777216\n");
  Rates cuda = default_rates(Backend::cuda, CommKind::nccl), cuda_busy = cuda;
  cuda_busy.host = {4, 2, 2};
  CHECK(estimate_case(big, job, cuda_busy, false) > 1.5 * estimate_case(big, job, cuda, false));
}

TEST_CASE("a backend's minimum warm-up time is part of every turn", "[estimate]") {
  const Case c = only_case("[defaults]\nwarmup = 1\n[[experiment]]\nworkload = \"gemm\"\nsize = 64\n");
  const Rates cuda = default_rates(Backend::cuda, CommKind::nccl);
  REQUIRE(cuda.warmup_s == 0.5);
  CHECK(estimate_case(c, JobShape{1, 1, 1}, cuda, false) > 0.5);
  Case cold = c;
  cold.params.set("warmup_s", 0.0);
  CHECK(estimate_case(cold, JobShape{1, 1, 1}, cuda, false) < 0.5);
}

TEST_CASE("a plan over its time budget is an input error naming the estimate and the largest parts", "[estimate]") {
  const auto plan = plan_of("[[experiment]]\nname = \"big\"\nworkload = \"gemm\"\nsize = [1024, 2048]\n"
                            "[[experiment]]\nname = \"small\"\nworkload = \"gemm\"\nsize = 64\n");
  const JobShape job{2, 1, 2};
  const PlanEstimate e = estimate_plan(plan, job, default_rates(Backend::cpu, CommKind::mpi));
  REQUIRE(e.total_s() > 1);
  CHECK_NOTHROW(check_time_budget(plan, e, job, 0, "budget_s"));  // no budget, and under a day
  CHECK_NOTHROW(check_time_budget(plan, e, job, e.total_s() * 1.01, "budget_s"));
  try {
    check_time_budget(plan, e, job, 1, "--time-budget");
    FAIL("no error");
  } catch (const InputError& err) {
    const std::string m = err.what();
    CHECK_THAT(m, Catch::Contains("the plan is estimated at about"));
    CHECK_THAT(m, Catch::Contains("on 2 ranks on 1 node, over the time budget of 1.0 s (--time-budget)"));
    CHECK_THAT(m, Catch::Contains("experiment 'big' about"));
    CHECK_THAT(m, Catch::Contains("the longest, case 3 of 6 (big size=2048 dtype=fp64 impl=vendor ops=1 [serial]), about"));
    CHECK(m.find("experiment 'big'") < m.find("experiment 'small'"));  // the largest first
    CHECK_THAT(m, Catch::EndsWith("or raise the budget"));
  }
  // What the estimate assumed of a busy host ends the message.
  CHECK_THROWS_WITH(check_time_budget(plan, e, job, 1, "budget_s", "host busy: load 6.2 on 2 cores; the estimate "
                                                                   "assumes it stays"),
                    Catch::EndsWith("or raise the budget (host busy: load 6.2 on 2 cores; the estimate assumes it "
                                    "stays)"));
}

TEST_CASE("without a budget, a plan estimated over a day is refused as a likely typo", "[estimate]") {
  const auto plan = plan_of("[defaults]\nreps = 10000000\n[[experiment]]\nname = \"typo\"\nworkload = \"gemm\"\n");
  const JobShape job{2, 1, 2};
  const PlanEstimate e = estimate_plan(plan, job, default_rates(Backend::cpu, CommKind::mpi));
  REQUIRE(e.total_s() > kDefaultTimeLimitS);
  REQUIRE(e.total_s() < kLongestDurationS);
  CHECK_THROWS_WITH(check_time_budget(plan, e, job, 0, "budget_s"),
                    Catch::Contains("on 2 ranks on 1 node, over 24 h 00 min, the limit where no budget is set; the "
                                    "largest parts: experiment 'typo' about") &&
                        Catch::Contains("A typo in reps, ops or a size? To run it all the same, set budget_s or "
                                        "--time-budget"));
  CHECK_NOTHROW(check_time_budget(plan, e, job, e.total_s() * 2, "--time-budget"));  // a budget allows it
}

TEST_CASE("an estimate of the largest counts says more than 1000 h, never a wrapped number", "[estimate]") {
  const auto plan = plan_of("[defaults]\nreps = 2147483647\nwarmup = 2147483647\n[[experiment]]\nname = \"typo\"\n"
                            "workload = \"gemm\"\nsize = 1048576\nops = 2147483647\n");
  const JobShape job{2, 1, 2};
  const PlanEstimate e = estimate_plan(plan, job, default_rates(Backend::cpu, CommKind::mpi));
  REQUIRE(e.total_s() > kLongestDurationS);
  try {
    check_time_budget(plan, e, job, 2592000, "budget_s");  // the largest budget, 30 days
    FAIL("no error");
  } catch (const InputError& err) {
    CHECK(std::string(err.what()).rfind("the plan is estimated at more than 1000 h on 2 ranks on 1 node, over the "
                                        "time budget of 720 h 00 min (budget_s); the largest parts: experiment "
                                        "'typo' more than 1000 h (2 cases); the longest, case 1 of 2 (typo ", 0) == 0);
  }
}

TEST_CASE("calibration measures this machine's rates", "[estimate]") {
  CpuDevice dev;
  const auto plan = plan_of("[[experiment]]\nworkload = \"gemm\"\ndtype = [\"fp64\", \"fp32\"]\nsize = 64\n");
  const Rates r = calibrate(dev, plan, default_rates(Backend::cpu, CommKind::mpi), 0.2);
  CHECK_THAT(r.source, Catch::Contains("measured on this CPU"));
  REQUIRE(r.gemm.size() == 2);  // the kinds the plan uses, nothing else
  for (const auto& [kind, rate] : r.gemm) {
    CHECK(rate.flops_s > 1e8);  // any CPU of this century, one thread
    CHECK(rate.call_s > 0);
    CHECK(rate.call_s < 0.01);
  }
  CHECK(r.stream_rate(kDeviceCopy) > 1e8);
  CHECK(r.stream_rate(kPass) > 1e8);
  CHECK(r.fill_bytes_s > 1e7);
  CHECK_FALSE(r.intra.measured);  // no transfers in the plan: their rates keep the defaults
  CHECK(r.inter.text == default_rates(Backend::cpu, CommKind::mpi).inter.text);
  CHECK(r.setup_bytes_s.count("gemm") == 1);  // the workload's own setup and check, timed
}

TEST_CASE("calibration times a transfer's setup and check on its largest case, in a group of one rank",
          "[estimate]") {
  CpuDevice dev;
  // A sweep from 8 bytes: its first case's setup would be all fixed costs; the 4 MiB one is timed.
  const auto plan = plan_of("[[experiment]]\nworkload = \"collective\"\nop = \"allreduce\"\n"
                            "bytes = [8, 4194304, 1024]\n[[experiment]]\nname = \"p\"\nworkload = \"p2p\"\n");
  const Rates r = calibrate(dev, plan, default_rates(Backend::cpu, CommKind::mpi), 0.2);
  REQUIRE(r.setup_bytes_s.count("collective") == 1);
  // A rate of this machine, from work that was done (not a zero time).
  CHECK(r.setup_bytes_s.at("collective") > 1e8);
  CHECK(r.setup_bytes_s.at("collective") < 1e12);
  CHECK(r.setup_bytes_s.count("p2p") == 0);  // pairs need two ranks: making inputs' rate prices it
}

TEST_CASE("every workload shrinks a case of gigabytes to tens of MiB for the calibration's setup measurement",
          "[estimate]") {
  // Cases of gigabytes: each workload's small() shrinks its own (dp_step and distributed_gemm had none, and check
  // made their gigabytes of inputs: tens of seconds on a loaded host).
  const auto plan = plan_of("[[experiment]]\nname = \"dp\"\nworkload = \"dp_step\"\nhidden = 16384\nbatch = 4096\n"
                            "layers = 8\n[[experiment]]\nname = \"dg\"\nworkload = \"distributed_gemm\"\n"
                            "size = 16384\n[[experiment]]\nname = \"g\"\nworkload = \"gemm\"\nsize = 16384\n");
  for (const auto& c : plan) {
    const WorkloadType& type = find_workload(c.workload);
    const MemoryNeed big = type.memory(c.params, true), small = type.memory(type.small(c.params), true);
    INFO(c.workload);
    CHECK(big.device_bytes + big.host_bytes > 1e9);
    CHECK(small.device_bytes + small.host_bytes < 64.0 * 1048576);
  }
}
