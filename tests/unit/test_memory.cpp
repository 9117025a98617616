// Memory known before running: each workload's need against what it really
// allocates (device buffers, host buffers and its own std::vectors), the
// host's share per rank, and the plan check's message.
#include <catch2/catch.hpp>

#include <malloc.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>

#include "comm/self_data_comm.hpp"
#include "common/counting_device.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "core/plan.hpp"
#include "workloads/memory_need.hpp"
#include "workloads/workload.hpp"

using namespace gpuscale;

// The heap as the workloads use it for their std::vectors: every operator new
// of this test binary is counted, so that the host part of a need is checked
// too. (Device and host buffers of the CPU device come from aligned_alloc.)
namespace {
std::atomic<std::int64_t> heap_live{0}, heap_peak{0};
}  // namespace

void* operator new(std::size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (!p) throw std::bad_alloc();
  const std::int64_t now = heap_live += static_cast<std::int64_t>(malloc_usable_size(p));
  std::int64_t peak = heap_peak.load();
  while (now > peak && !heap_peak.compare_exchange_weak(peak, now)) {
  }
  return p;
}

void operator delete(void* p) noexcept {
  if (!p) return;
  heap_live -= static_cast<std::int64_t>(malloc_usable_size(p));
  std::free(p);
}

void operator delete(void* p, std::size_t) noexcept { operator delete(p); }

namespace {

Case first_case(const std::string& toml) {
  return expand(parse_config(toml, "m.toml", {}, workload_schemas())).at(0);
}

struct Measured {
  MemoryNeed need, used;  // used.host_bytes: host buffers and the peak of the heap
  std::string skipped;    // why a group of one cannot run the case (pairs need two ranks); then nothing was measured
};

// setup, one sample and verify of the case on a group of one (for a transfer).
Measured measure(const Case& c, bool on_host) {
  testing::CountingDevice dev(on_host);
  Group group;
  group.data = std::make_unique<SelfDataComm>(dev);
  const bool transfer = find_workload(c.workload).scope(c.params).has_value();
  CaseContext ctx{dev, transfer ? &group : nullptr};
  auto w = find_workload(c.workload).make(c.params);
  if (std::string why = w->skip_reason(ctx); !why.empty()) return {{}, {}, why};
  const std::int64_t heap_before = heap_live;
  heap_peak = heap_before;
  w->setup(ctx, 7);
  w->run_sample(ctx);
  dev.join_lanes();
  ctx.synchronize();
  CHECK(w->verify(ctx).ok);
  const double heap = static_cast<double>(heap_peak - heap_before);
  return {memory_need(c, on_host), {dev.device_bytes, dev.host_bytes + heap}, ""};
}

// The examples of every registered workload (WorkloadType::examples), then the cases of `extra` (TOML keys).
std::vector<Case> examples_and(const std::vector<std::string>& extra) {
  std::vector<Case> out;
  for (const WorkloadType* t : workload_registry()) {
    for (const Params& p : t->examples()) {
      Case c;
      c.experiment = c.workload = t->schema().name;
      c.params = p;
      out.push_back(c);
    }
  }
  for (const std::string& keys : extra) out.push_back(first_case("[[experiment]]\n" + keys));
  return out;
}

}  // namespace

TEST_CASE("every workload allocates no more than its memory need says, and its device need is not 2x too much",
          "[memory]") {
  // Beyond the examples: sizes past the chunks a workload stages and checks in.
  const std::vector<Case> cases = examples_and({
      "workload = \"elementwise\"\nelements = 5000000\ndtype = \"fp64\"\nops = 1\n",
      "workload = \"collective\"\nop = \"sendrecv\"\nbytes = 40000000\n",
  });
  constexpr double kSlack = 64 * 1024;  // scalars, Catch's and the stream's own small allocations
  for (const Case& c : cases) {
    for (const bool on_host : {true, false}) {
      const Measured m = measure(c, on_host);
      const std::string keys = c.workload + " " + c.param_label() + ", ";
      if (!m.skipped.empty()) {
        INFO(keys << "not measured on a group of one: " << m.skipped);
        CHECK(find_workload(c.workload).scope(c.params).has_value());  // a transfer: tests/mpi/test_memory.cpp
        continue;
      }
      INFO(keys << (on_host ? "buffers on the host" : "buffers on a device") << ": device " << m.used.device_bytes
                << " of " << m.need.device_bytes << " (" << m.need.device_bytes / m.used.device_bytes
                << "x), host " << m.used.host_bytes << " of " << m.need.host_bytes << " ("
                << m.need.host_bytes / m.used.host_bytes << "x)");
      CHECK(m.used.device_bytes <= m.need.device_bytes + kSlack);
      CHECK(m.need.device_bytes <= 2 * m.used.device_bytes + kSlack);
      CHECK(m.used.host_bytes <= m.need.host_bytes + kSlack);
    }
  }
}

TEST_CASE("every workload has a memory need that grows with its size and never overflows", "[memory]") {
  for (const WorkloadType* t : workload_registry()) {
    const std::string& name = t->schema().name;
    INFO(name);
    const MemoryNeed need = memory_need(first_case("[[experiment]]\nworkload = \"" + name + "\"\n"), false);
    CHECK(need.device_bytes > 0);
    CHECK(need.host_bytes > 0);
  }
  const auto copy = [](std::int64_t bytes) {
    return memory_need(first_case("[[experiment]]\nworkload = \"copy\"\nbytes = " + std::to_string(bytes) + "\n"), true);
  };
  CHECK(copy(1 << 20).device_bytes == 1 << 20);
  CHECK(copy(std::int64_t{1} << 40).device_bytes == Approx(std::ldexp(1.0, 40)));  // the largest bytes
  const MemoryNeed gemm = memory_need(first_case("[[experiment]]\nworkload = \"gemm\"\nsize = 1048576\n"), false);
  CHECK(gemm.device_bytes == Approx(3 * 8 * std::ldexp(1.0, 40)));
  const MemoryNeed dp = memory_need(
      first_case("[[experiment]]\nworkload = \"dp_step\"\nhidden = 1048576\nlayers = 1048576\n"), false);
  CHECK(std::isfinite(dp.device_bytes));
  CHECK(dp.device_bytes > 1e19);  // 3 x 2^60 fp32 weights and gradients
}

TEST_CASE("a collective's need holds for any group size: bytes is the total, as in nccl-tests", "[memory]") {
  const Case c = first_case("[[experiment]]\nworkload = \"collective\"\nop = \"allgather\"\nbytes = 1000000\n");
  CHECK(memory_need(c, true).device_bytes == 2e6);
  // MPI on a GPU stages both buffers in pinned host memory.
  CHECK(memory_need(c, false).host_bytes == memory_need(c, true).host_bytes + 2e6);
}

TEST_CASE("the host's share per rank is a safe part of what is available", "[memory]") {
  const std::string meminfo = "MemTotal:       16000000 kB\nMemFree:         1000000 kB\n"
                              "MemAvailable:   10000000 kB\nBuffers:           10 kB\n"
                              "HugePages_Total:       0\nHugePages_Free:        0\nHugepagesize:       2048 kB\n";
  const MemoryLimits one = host_memory_limits(meminfo, "max\n", 1);
  CHECK(one.host_bytes == Approx(0.8 * 10000000 * 1024.0));
  CHECK(one.device_bytes == 0);
  CHECK(one.host_from == "80% of 9.54 GiB RAM available");
  const MemoryLimits four = host_memory_limits(meminfo, "max\n", 4);
  CHECK(four.host_bytes == Approx(one.host_bytes / 4));
  CHECK(four.host_from == "80% of 9.54 GiB RAM available, over 4 ranks on this node");
  const MemoryLimits capped = host_memory_limits(meminfo, "2147483648\n", 1);
  CHECK(capped.host_bytes == Approx(0.8 * 2147483648.0));
  CHECK(capped.host_from == "80% of 2 GiB allowed to this job (cgroup memory.max)");
  CHECK(host_memory_limits(meminfo, "", 2).host_bytes == Approx(one.host_bytes / 2));  // no cgroup v2 here
  CHECK(host_memory_limits(meminfo, "99999999999999\n", 1).host_bytes == Approx(one.host_bytes));  // above RAM
  // A kernel older than MemAvailable: what is free.
  const MemoryLimits old = host_memory_limits("MemTotal: 4000 kB\nMemFree: 2048 kB\n", "max", 1);
  CHECK(old.host_bytes == Approx(0.8 * 2048 * 1024));
  CHECK(old.host_from == "80% of 2 MiB RAM free");
}

TEST_CASE("ranks per node from Slurm's task counts", "[memory]") {
  CHECK(parse_slurm_tasks_per_node("4") == 4);
  CHECK(parse_slurm_tasks_per_node("2(x3)") == 2);
  CHECK(parse_slurm_tasks_per_node("2(x3),1") == 2);
  CHECK(parse_slurm_tasks_per_node("") == 0);
  CHECK(parse_slurm_tasks_per_node("(x3)") == 0);
}

TEST_CASE("a CUDA plan is held against the smallest GPU, or a ceiling where no GPU is visible", "[memory]") {
  CudaStatus none;
  const MemoryLimits away = memory_limits_here(Backend::cuda, none, 1);
  CHECK(away.device_bytes == std::ldexp(1.0, 40));
  CHECK(away.device_from == "more than any GPU has today; no GPU is visible here");
  CudaStatus gpu;
  gpu.usable = true;
  gpu.device_memory_bytes = 80.0 * (1 << 30);
  const MemoryLimits here = memory_limits_here(Backend::cuda, gpu, 1);
  CHECK(here.device_bytes == Approx(72.0 * (1 << 30)));
  CHECK(here.device_from == "90% of the GPU's 80 GiB");
  CHECK(memory_limits_here(Backend::cpu, gpu, 1).device_bytes == 0);  // the CPU backend's device memory is the host's
}

TEST_CASE("sizes in binary units", "[memory][text]") {
  CHECK(format_bytes(0) == "0 B");
  CHECK(format_bytes(512) == "512 B");
  CHECK(format_bytes(1536) == "1.5 KiB");
  CHECK(format_bytes(256.0 * 1024 * 1024) == "256 MiB");
  CHECK(format_bytes(1000.0 * 1024 * 1024) == "1000 MiB");
  CHECK(format_bytes(6.2 * (1 << 30)) == "6.2 GiB");
  CHECK(format_bytes(std::ldexp(1.0, 62)) == "4 EiB");
}

TEST_CASE("each experiment's largest need, for check's summary", "[memory]") {
  const auto plan = expand(parse_config("[[experiment]]\nname = \"c\"\nworkload = \"copy\"\nbytes = [1000, 5000]\n"
                                        "direction = [\"d2d\", \"h2d\"]\n[[experiment]]\nname = \"g\"\nworkload = "
                                        "\"gemm\"\nsize = 10\n",
                                        "m.toml", {}, workload_schemas()));
  const auto most = memory_by_experiment(plan, true);
  REQUIRE(most.size() == 2);
  CHECK(most[0].first == "c");
  CHECK(most[0].second.device_bytes == 10000);  // d2d of 5000 bytes
  CHECK(most[0].second.host_bytes == 10000);    // h2d of 5000 bytes: the host end, and a stage as large
  CHECK(most[1].first == "g");
  CHECK(most[1].second.device_bytes == 3 * 100 * 8);
}

TEST_CASE("a case that cannot fit is an input error naming it, its need and what is available", "[memory]") {
  const auto plan = expand(parse_config("[[experiment]]\nname = \"big\"\nworkload = \"copy\"\nbytes = [1024, "
                                        "1099511627776]\nmodes = [\"parallel\"]\n",
                                        "m.toml", {}, workload_schemas()));
  MemoryLimits cpu;
  cpu.host_bytes = 8.0 * (1 << 30);
  cpu.host_from = "80% of 10 GiB RAM available";
  try {
    check_plan_memory(plan, cpu);
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) ==
          "case 2 of 2 (big bytes=1099511627776 direction=h2d host=pinned ops=1 [parallel]): needs 2 TiB of memory "
          "per rank (buffers 1 TiB, host copies 1 TiB), more than the 8 GiB it may use: 80% of 10 GiB RAM available");
  }
  MemoryLimits gpu = cpu;
  gpu.device_bytes = 72.0 * (1 << 30);
  gpu.device_from = "90% of the GPU's 80 GiB";
  CHECK_THROWS_WITH(check_plan_memory(plan, gpu),
                    Catch::Contains("needs 1 TiB of device memory per rank, more than the 72 GiB it may use: 90% of "
                                    "the GPU's 80 GiB"));
  gpu.host_bytes = 1024;
  CHECK_THROWS_WITH(check_plan_memory({plan[0]}, gpu),
                    Catch::Contains("case 1 of 1 (big bytes=1024 ") &&
                        Catch::Contains("needs 2 KiB of host memory per rank"));
  CHECK_NOTHROW(check_plan_memory({plan[0]}, cpu));
}
