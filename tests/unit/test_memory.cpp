// Memory known before running: each workload's need against what it really
// allocates, the host's share per rank, and the plan check's message.
#include <catch2/catch.hpp>

#include "common/forwarding_device.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "core/plan.hpp"
#include "workloads/memory_need.hpp"
#include "workloads/workload.hpp"

using namespace gpuscale;

namespace {

// Counts the bytes allocated through it (device buffers and host buffers).
class CountingDevice : public testing::ForwardingDevice {
 public:
  DeviceBuffer alloc(std::size_t b) override {
    device_bytes += static_cast<double>(b);
    return ForwardingDevice::alloc(b);
  }
  HostBuffer alloc_host(std::size_t b, bool pinned) override {
    host_bytes += static_cast<double>(b);
    return ForwardingDevice::alloc_host(b, pinned);
  }
  double device_bytes = 0, host_bytes = 0;
};

Case first_case(const std::string& toml) {
  return expand(parse_config(toml, "m.toml", {}, workload_schemas())).at(0);
}

}  // namespace

TEST_CASE("a device-local workload allocates no more than its memory need says, and not much less", "[memory]") {
  const char* configs[] = {
      "workload = \"gemm\"\nsize = 96\n",
      "workload = \"gemm\"\nm = 64\nn = 32\nk = 200\ndtype = \"fp32\"\n",
      "workload = \"copy\"\nbytes = 1000000\ndirection = \"h2d\"\n",
      "workload = \"copy\"\nbytes = 1000000\ndirection = \"d2d\"\n",
      "workload = \"elementwise\"\nelements = 300000\n",
      "workload = \"async\"\nsize = 80\nops = 3\nlog_norm = \"device\"\n",
      "workload = \"pipeline\"\nsize = 64\nops = 5\n",
  };
  for (const char* text : configs) {
    const Case c = first_case(std::string("[[experiment]]\n") + text);
    CountingDevice dev;
    CaseContext ctx{dev};
    auto w = find_workload(c.workload).make(c.params);
    w->setup(ctx, 7);
    w->run_sample(ctx);
    dev.synchronize();
    CHECK(w->verify(ctx).ok);
    const MemoryNeed need = memory_need(c, dev.buffers_on_host());
    INFO(text << " device " << dev.device_bytes << " host " << dev.host_bytes << " need " << need.device_bytes
              << " + " << need.host_bytes);
    CHECK(dev.device_bytes <= need.device_bytes + 64);  // a few bytes of scalars are left out
    CHECK(dev.device_bytes >= 0.5 * need.device_bytes);
    CHECK(dev.device_bytes + dev.host_bytes <= need.device_bytes + need.host_bytes + 64);
  }
}

TEST_CASE("every workload has a memory need that grows with its size", "[memory]") {
  for (const auto& e : workload_registry()) {
    const Case c = first_case("[[experiment]]\nworkload = \"" + e.schema.name + "\"\n");
    const MemoryNeed need = memory_need(c, false);
    INFO(e.schema.name);
    CHECK(need.device_bytes > 0);
    CHECK(need.host_bytes > 0);
  }
  const auto copy = [](std::int64_t bytes) {
    return memory_need(first_case("[[experiment]]\nworkload = \"copy\"\nbytes = " + std::to_string(bytes) + "\n"), true);
  };
  CHECK(copy(1 << 20).device_bytes == 1 << 20);
  CHECK(copy(std::int64_t{1} << 60).device_bytes == Approx(std::ldexp(1.0, 60)));  // no overflow
}

TEST_CASE("the host's share per rank is a safe part of what is available", "[memory]") {
  const std::string meminfo = "MemTotal:       16000000 kB\nMemFree:         1000000 kB\n"
                              "MemAvailable:   10000000 kB\nBuffers:           10 kB\n";
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
}

TEST_CASE("ranks per node from Slurm's task counts", "[memory]") {
  CHECK(parse_slurm_tasks_per_node("4") == 4);
  CHECK(parse_slurm_tasks_per_node("2(x3),1") == 2);
  CHECK(parse_slurm_tasks_per_node("") == 0);
  CHECK(parse_slurm_tasks_per_node("(x3)") == 0);
}

TEST_CASE("sizes in binary units", "[memory]") {
  CHECK(format_bytes(512) == "512 B");
  CHECK(format_bytes(1536) == "1.5 KiB");
  CHECK(format_bytes(256.0 * 1024 * 1024) == "256 MiB");
  CHECK(format_bytes(std::ldexp(1.0, 62)) == "4 EiB");
}

TEST_CASE("a case that cannot fit is an input error naming it, its need and what is available", "[memory]") {
  const auto plan = expand(parse_config("[[experiment]]\nname = \"big\"\nworkload = \"copy\"\nbytes = [1024, "
                                        "1152921504606846976]\nmodes = [\"parallel\"]\n",
                                        "m.toml", {}, workload_schemas()));
  MemoryLimits cpu;
  cpu.host_bytes = 8.0 * (1 << 30);
  cpu.host_from = "80% of 10 GiB RAM available";
  try {
    check_plan_memory(plan, cpu);
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) ==
          "case [1] big bytes=1152921504606846976 direction=h2d host=pinned ops=1 [parallel]: needs 4 EiB of memory "
          "per rank (buffers 1 EiB, host copies 3 EiB), more than the 8 GiB it may use: 80% of 10 GiB RAM available");
  }
  MemoryLimits gpu = cpu;
  gpu.device_bytes = 72.0 * (1 << 30);
  gpu.device_from = "90% of the GPU's 80 GiB";
  CHECK_THROWS_WITH(check_plan_memory(plan, gpu),
                    Catch::Contains("needs 1 EiB of device memory per rank, more than the 72 GiB it may use: 90% of "
                                    "the GPU's 80 GiB"));
  CHECK_NOTHROW(check_plan_memory({plan[0]}, cpu));
}
