// GPU telemetry without a GPU: the loader's errors on this machine, the NVML logic against a fake
// NVML (entry points as plain functions), the sampler against a fake source, and sysfs lookups.
#include <catch2/catch.hpp>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "core/clock.hpp"
#include "telemetry/nvml.hpp"
#include "telemetry/telemetry.hpp"

using namespace gpuscale;
namespace fs = std::filesystem;

namespace {

// ---- a fake NVML node: our GPU at 18, peers at 3B (2 NVLinks) and 86 (PCIe only), links 0..3 ----

struct FakeGpu {
  const char* bus_id;  // as NVML writes it
};

struct FakeNode {
  FakeGpu gpus[3] = {{"00000000:18:00.0"}, {"00000000:3B:00.0"}, {"00000000:86:00.0"}};
  nvml::nvmlReturn_t init_rc = nvml::NVML_SUCCESS;
  bool gpu_missing = false;
  bool not_supported = false;  // every optional query answers NOT_SUPPORTED
  int shutdowns = 0;
};
FakeNode node;

nvml::nvmlDevice_t handle(int i) { return reinterpret_cast<nvml::nvmlDevice_t>(&node.gpus[i]); }
int index_of(nvml::nvmlDevice_t d) { return static_cast<int>(reinterpret_cast<FakeGpu*>(d) - node.gpus); }

void fill_pci(nvml::nvmlPciInfo_t* pci, const char* bus_id) {
  *pci = {};
  std::strncpy(pci->busId, bus_id, sizeof pci->busId - 1);
}

// A reply for an optional query: NOT_SUPPORTED when asked, else store `value`.
template <typename T>
nvml::nvmlReturn_t answer(T* out, T value) {
  if (node.not_supported) return nvml::NVML_ERROR_NOT_SUPPORTED;
  *out = value;
  return nvml::NVML_SUCCESS;
}

nvml::Api core_api() {
  nvml::Api a;
  a.Init_v2 = [] { return node.init_rc; };
  a.Shutdown = [] {
    ++node.shutdowns;
    return nvml::NVML_SUCCESS;
  };
  a.ErrorString = [](nvml::nvmlReturn_t rc) {
    return rc == nvml::NVML_ERROR_DRIVER_NOT_LOADED ? "Driver Not Loaded"
           : rc == nvml::NVML_ERROR_NOT_FOUND       ? "Not Found"
                                                    : "Unknown Error";
  };
  a.DeviceGetHandleByPciBusId_v2 = [](const char* id, nvml::nvmlDevice_t* d) {
    if (node.gpu_missing || normalize_pci_bus_id(id) != "0000:18:00.0") return nvml::NVML_ERROR_NOT_FOUND;
    *d = handle(0);
    return nvml::NVML_SUCCESS;
  };
  return a;
}

nvml::Api full_api() {
  nvml::Api a = core_api();
  a.DeviceGetCount_v2 = [](unsigned* n) { return answer(n, 3U); };
  a.DeviceGetHandleByIndex_v2 = [](unsigned i, nvml::nvmlDevice_t* d) {
    if (i >= 3) return nvml::NVML_ERROR_INVALID_ARGUMENT;
    *d = handle(static_cast<int>(i));
    return nvml::NVML_SUCCESS;
  };
  a.DeviceGetPciInfo_v3 = [](nvml::nvmlDevice_t d, nvml::nvmlPciInfo_t* pci) {
    fill_pci(pci, node.gpus[index_of(d)].bus_id);
    return nvml::NVML_SUCCESS;
  };
  a.DeviceGetClockInfo = [](nvml::nvmlDevice_t, nvml::nvmlClockType_t t, unsigned* mhz) {
    return answer(mhz, t == nvml::NVML_CLOCK_SM ? 1755U : 2619U);
  };
  a.DeviceGetMaxClockInfo = [](nvml::nvmlDevice_t, nvml::nvmlClockType_t t, unsigned* mhz) {
    return answer(mhz, t == nvml::NVML_CLOCK_SM ? 1980U : 2619U);
  };
  // No nvmlDeviceGetTemperatureV: an older driver, so the legacy call is used.
  a.DeviceGetTemperature = [](nvml::nvmlDevice_t, nvml::nvmlTemperatureSensors_t s, unsigned* c) {
    return s == nvml::NVML_TEMPERATURE_GPU ? answer(c, 47U) : nvml::NVML_ERROR_INVALID_ARGUMENT;
  };
  a.DeviceGetPowerUsage = [](nvml::nvmlDevice_t, unsigned* mw) { return answer(mw, 350500U); };
  a.DeviceGetEnforcedPowerLimit = [](nvml::nvmlDevice_t, unsigned* mw) { return answer(mw, 700000U); };
  a.DeviceGetCurrentClocksEventReasons = [](nvml::nvmlDevice_t, unsigned long long* r) {
    return answer(r, 0x4ULL);  // nvmlClocksEventReasonSwPowerCap
  };
  a.DeviceGetCurrPcieLinkGeneration = [](nvml::nvmlDevice_t, unsigned* v) { return answer(v, 4U); };
  a.DeviceGetCurrPcieLinkWidth = [](nvml::nvmlDevice_t, unsigned* v) { return answer(v, 8U); };
  a.DeviceGetMaxPcieLinkGeneration = [](nvml::nvmlDevice_t, unsigned* v) { return answer(v, 5U); };
  a.DeviceGetMaxPcieLinkWidth = [](nvml::nvmlDevice_t, unsigned* v) { return answer(v, 16U); };
  // Links 0 and 1 go to the GPU at 3B, link 2 to an NVSwitch, link 3 is down; there is no link 4.
  a.DeviceGetNvLinkState = [](nvml::nvmlDevice_t, unsigned link, nvml::nvmlEnableState_t* on) {
    if (link >= 4) return nvml::NVML_ERROR_INVALID_ARGUMENT;
    return answer(on, link < 3 ? nvml::NVML_FEATURE_ENABLED : 0);
  };
  a.DeviceGetNvLinkRemotePciInfo_v2 = [](nvml::nvmlDevice_t, unsigned link, nvml::nvmlPciInfo_t* pci) {
    fill_pci(pci, link < 2 ? "00000000:3b:00.0" : "00000000:C0:00.0");
    return nvml::NVML_SUCCESS;
  };
  a.DeviceGetTopologyCommonAncestor = [](nvml::nvmlDevice_t, nvml::nvmlDevice_t other, int* level) {
    return answer(level, index_of(other) == 1 ? 40 : 50);  // NVML_TOPOLOGY_NODE, NVML_TOPOLOGY_SYSTEM
  };
  return a;
}

std::shared_ptr<const nvml::Library> fake_nvml(const nvml::Api& api) {
  nvml::Opened opened = nvml::init_library(api, nullptr, "fake NVML");
  REQUIRE(opened.why_not == "");
  return opened.library;
}

// ---- a fake source for the sampler: sm_clock_mhz = 1000 + how many reads so far ----

class CountingSource : public TelemetrySource {
 public:
  TelemetrySample read() override {
    TelemetrySample s;
    s.sm_clock_mhz = 1000 + ++reads;
    return s;
  }
  std::atomic<int> reads{0};
};

}  // namespace

// ---- loading NVML -------------------------------------------------------------------------------

TEST_CASE("a missing NVML library is named, with the loader's own words", "[telemetry]") {
  const std::string lib = "libnvidia-ml-not-here.so.1";
  const GpuTelemetry t = open_gpu_telemetry("0000:18:00.0", lib);
  CHECK(t.source == nullptr);
  CHECK_THAT(t.unavailable, Catch::Contains(lib + " could not be loaded"));
  REQUIRE(dlopen(lib.c_str(), RTLD_NOW) == nullptr);
  CHECK_THAT(t.unavailable, Catch::Contains(dlerror()));
}

TEST_CASE("a library that is not NVML names the entry point it lacks", "[telemetry]") {
  const GpuTelemetry t = open_gpu_telemetry("0000:18:00.0", "libm.so.6");
  CHECK(t.source == nullptr);
  CHECK_THAT(t.unavailable, Catch::Contains("libm.so.6") && Catch::Contains("nvmlInit_v2"));
}

TEST_CASE("an NVML that cannot initialise says why in NVML's words", "[telemetry]") {
  node = FakeNode{};
  node.init_rc = nvml::NVML_ERROR_DRIVER_NOT_LOADED;
  const nvml::Opened opened = nvml::init_library(full_api(), nullptr, "fake NVML");
  CHECK(opened.library == nullptr);
  CHECK(opened.why_not == "nvmlInit_v2 from fake NVML failed: Driver Not Loaded.");
  CHECK(node.shutdowns == 0);  // nothing to shut down

  nvml::Api no_lookup = full_api();
  no_lookup.DeviceGetHandleByPciBusId_v2 = nullptr;
  CHECK_THAT(nvml::init_library(no_lookup, nullptr, "fake NVML").why_not,
             Catch::Contains("nvmlDeviceGetHandleByPciBusId_v2"));
}

TEST_CASE("a GPU NVML cannot find makes telemetry unavailable and shuts NVML down again", "[telemetry]") {
  node = FakeNode{};
  node.gpu_missing = true;
  const GpuTelemetry t = open_gpu_telemetry("0000:18:00.0", fake_nvml(full_api()));
  CHECK(t.source == nullptr);
  CHECK(t.unavailable ==
        "NVML found no GPU at PCI bus id '0000:18:00.0' (nvmlDeviceGetHandleByPciBusId_v2 failed: Not Found).");
  CHECK(node.shutdowns == 1);
}

// ---- what NVML reports ----------------------------------------------------------------------------

TEST_CASE("readings come in MHz, degrees C and watts, with NVML's clock event bits", "[telemetry]") {
  node = FakeNode{};
  nvml::Api api = full_api();
  double temperature = 47;  // the legacy nvmlDeviceGetTemperature's
  SECTION("a driver with nvmlDeviceGetTemperatureV") {
    api.DeviceGetTemperatureV = [](nvml::nvmlDevice_t, nvml::nvmlTemperature_v1_t* t) {
      // nvmlTemperature_v1 = NVML_STRUCT_VERSION(Temperature, 1) = sizeof (12) | 1 << 24
      if (t->version != 16777228U) return nvml::NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
      if (t->sensorType != nvml::NVML_TEMPERATURE_GPU) return nvml::NVML_ERROR_INVALID_ARGUMENT;
      t->temperature = 52;
      return nvml::NVML_SUCCESS;
    };
    temperature = 52;
  }
  SECTION("an older driver without it") {}
  GpuTelemetry t = open_gpu_telemetry("0000:18:00.0", fake_nvml(api));
  REQUIRE(t.unavailable == "");
  REQUIRE(t.source != nullptr);
  const TelemetrySample s = t.source->read();
  CHECK(s.sm_clock_mhz == 1755);
  CHECK(s.mem_clock_mhz == 2619);
  CHECK(s.temperature_c == temperature);
  CHECK(s.power_w == Approx(350.5));
  CHECK(s.clock_event_reasons == 0x4);
}

TEST_CASE("static facts: limits, PCIe link, NVLinks per peer and how peers are attached", "[telemetry]") {
  node = FakeNode{};
  // CUDA writes a 4-digit domain; NVML 8 digits and upper case: the same GPU.
  const GpuTelemetry t = open_gpu_telemetry("0000:18:00.0", fake_nvml(full_api()));
  REQUIRE(t.unavailable == "");
  const GpuStatic& g = t.info;
  CHECK(g.max_sm_clock_mhz == 1980);
  CHECK(g.max_mem_clock_mhz == 2619);
  CHECK(g.power_limit_w == 700);
  CHECK(g.pcie_gen == 4);
  CHECK(g.pcie_width == 8);
  CHECK(g.pcie_max_gen == 5);
  CHECK(g.pcie_max_width == 16);
  CHECK(g.nvlinks_active == 3);  // two to a GPU, one to a switch; the downed link does not count
  REQUIRE(g.peers.size() == 2);  // itself is not its own peer
  CHECK(g.peers[0].pci_bus_id == "0000:3b:00.0");
  CHECK(g.peers[0].nvlinks == 2);
  CHECK(g.peers[0].common_ancestor == "node");
  CHECK(g.peers[1].pci_bus_id == "0000:86:00.0");
  CHECK(g.peers[1].nvlinks == 0);
  CHECK(g.peers[1].common_ancestor == "system");
}

TEST_CASE("what the driver cannot tell stays unknown, and telemetry still works", "[telemetry]") {
  node = FakeNode{};
  SECTION("queries answer NOT_SUPPORTED") { node.not_supported = true; }
  SECTION("an old driver lacks the entry points") {}
  const nvml::Api api = node.not_supported ? full_api() : core_api();
  const GpuTelemetry t = open_gpu_telemetry("0000:18:00.0", fake_nvml(api));
  CHECK(t.unavailable == "");
  REQUIRE(t.source != nullptr);
  const TelemetrySample s = t.source->read();
  CHECK(std::isnan(s.sm_clock_mhz));
  CHECK(std::isnan(s.mem_clock_mhz));
  CHECK(std::isnan(s.temperature_c));
  CHECK(std::isnan(s.power_w));
  CHECK(s.clock_event_reasons == -1);
  CHECK(std::isnan(t.info.max_sm_clock_mhz));
  CHECK(std::isnan(t.info.power_limit_w));
  CHECK(t.info.pcie_gen == -1);
  CHECK(t.info.pcie_max_width == -1);
  CHECK(t.info.nvlinks_active == -1);
  CHECK(t.info.peers.empty());
}

TEST_CASE("NVML stays initialised while a source from it lives", "[telemetry]") {
  node = FakeNode{};
  std::unique_ptr<TelemetrySource> source;
  {
    GpuTelemetry t = open_gpu_telemetry("0000:18:00.0", fake_nvml(full_api()));
    source = std::move(t.source);
  }
  CHECK(node.shutdowns == 0);
  CHECK(source->read().sm_clock_mhz == 1755);
  source.reset();
  CHECK(node.shutdowns == 1);
}

// ---- the sampler ----------------------------------------------------------------------------------

TEST_CASE("start and stop with nothing between give the two end samples", "[telemetry]") {
  CountingSource source;
  double now = 10.0;
  TelemetrySampler sampler(source, 10.0, [&now] { return now += 1.0; });
  const double t0 = clock_now();
  sampler.start();
  const auto samples = sampler.stop();
  CHECK(clock_now() - t0 < 1.0);  // stop wakes the thread; it does not wait out the 10 s interval
  REQUIRE(samples.size() == 2);
  CHECK(samples[0].time_s == 11.0);
  CHECK(samples[0].sm_clock_mhz == 1001);
  CHECK(samples[1].time_s == 12.0);
  CHECK(samples[1].sm_clock_mhz == 1002);
  CHECK(std::isnan(samples[1].power_w));  // what the source left unknown stays unknown
}

TEST_CASE("sampling every 10 ms for 120 ms: the two ends, and at most one sample per 10 ms", "[telemetry]") {
  CountingSource source;
  TelemetrySampler sampler(source, 0.010, clock_now);
  const double outer0 = clock_now();
  sampler.start();
  const double inner0 = clock_now();
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  const double inner = clock_now() - inner0;
  const auto samples = sampler.stop();
  const double outer = clock_now() - outer0;

  // About 14 on an idle machine; a late wake-up (a loaded machine) loses ticks, never adds one: how many
  // arrive is a timing, so only the bound is checked.
  const auto n = static_cast<double>(samples.size());
  INFO(samples.size() << " samples in " << outer << " s, " << inner << " s between start and stop");
  CHECK(n >= 2);
  CHECK(n <= 2 + std::floor(outer / 0.010));
  CHECK(source.reads == static_cast<int>(samples.size()));  // it read only when it sampled: no spinning
  for (std::size_t i = 0; i < samples.size(); ++i) {
    CHECK(samples[i].sm_clock_mhz == 1000.0 + static_cast<double>(i + 1));
    if (i > 0) CHECK(samples[i].time_s > samples[i - 1].time_s);
  }
}

TEST_CASE("starting again forgets the previous run's samples", "[telemetry]") {
  CountingSource source;
  double now = 0.0;
  TelemetrySampler sampler(source, 10.0, [&now] { return now += 1.0; });
  sampler.start();
  REQUIRE(sampler.stop().size() == 2);
  sampler.start();
  const auto second = sampler.stop();
  REQUIRE(second.size() == 2);
  CHECK(second[0].time_s == 3.0);
  CHECK(second[1].sm_clock_mhz == 1004);
}

TEST_CASE("destroying a running sampler stops its thread at once", "[telemetry]") {
  CountingSource source;
  SECTION("long interval: the destructor does not wait it out") {
    const double t0 = clock_now();
    {
      TelemetrySampler sampler(source, 10.0, clock_now);
      sampler.start();
    }
    CHECK(clock_now() - t0 < 1.0);
    CHECK(source.reads == 1);  // only start's sample; no last sample on destruction
  }
  SECTION("short interval: nothing reads the source afterwards") {
    {
      TelemetrySampler sampler(source, 0.002, clock_now);
      sampler.start();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const int after = source.reads;
    CHECK(after > 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(source.reads == after);
  }
}

TEST_CASE("a sampler needs a positive interval and a clock", "[telemetry]") {
  CountingSource source;
  CHECK_THROWS_AS(TelemetrySampler(source, 0.0, clock_now), std::invalid_argument);
  CHECK_THROWS_AS(TelemetrySampler(source, NAN, clock_now), std::invalid_argument);
  CHECK_THROWS_AS(TelemetrySampler(source, 1.0, nullptr), std::invalid_argument);
}

// ---- PCI bus ids and sysfs ------------------------------------------------------------------------

TEST_CASE("CUDA's and NVML's forms of a bus id name the same device", "[telemetry]") {
  CHECK(normalize_pci_bus_id("0000:3b:00.0") == "0000:3b:00.0");
  CHECK(normalize_pci_bus_id("00000000:3B:00.0") == "0000:3b:00.0");
  CHECK(normalize_pci_bus_id("3B:00.0") == "0000:3b:00.0");
  CHECK(normalize_pci_bus_id("10000:01:1f.7") == "10000:01:1f.7");  // VMD domains are wider
  CHECK(normalize_pci_bus_id("") == "");
  CHECK(normalize_pci_bus_id("0000:3b:00") == "0000:3b:00.0");
  CHECK(normalize_pci_bus_id("0000:3g:00.0") == "");
  CHECK(normalize_pci_bus_id("0000:3b:20.0") == "");  // device numbers stop at 1f
  CHECK(normalize_pci_bus_id("../../0:0:0.0") == "");
}

TEST_CASE("a PCI device that does not exist has no NUMA node and no CPU list", "[telemetry]") {
  CHECK(pci_numa_node("0000:ff:1f.7") == -1);
  CHECK(pci_local_cpulist("0000:ff:1f.7") == "");
  CHECK(pci_numa_node("not a bus id") == -1);
  CHECK(pci_local_cpulist("not a bus id") == "");
}

TEST_CASE("a PCI device on this machine is found by NVML's form of its id", "[telemetry]") {
  const fs::path root = "/sys/bus/pci/devices";
  std::error_code ec;
  fs::directory_iterator it(root, ec);
  if (ec || it == fs::directory_iterator()) {
    WARN("no PCI devices in " << root << "; nothing to look up");
    return;
  }
  const std::string name = it->path().filename().string();  // "0000:00:00.0"
  std::string nvml_form = "0000" + name;
  for (char& c : nvml_form) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::string cpulist;
  std::getline(std::ifstream(it->path() / "local_cpulist"), cpulist);
  int node_id = -1;
  std::ifstream(it->path() / "numa_node") >> node_id;
  CHECK(pci_local_cpulist(nvml_form) == cpulist);
  CHECK(pci_numa_node(nvml_form) == std::max(node_id, -1));
}
