// What a GPU did while a case ran (clocks, temperature, power, why clocks dropped) and how it
// sits in the node (PCIe, NVLink, peers, NUMA). Works, with fields unknown, where NVML is absent.
#pragma once

#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gpuscale {

namespace nvml {
class Library;
}

struct TelemetrySample {
  double time_s = 0;  // filled by the sampler from its clock
  double sm_clock_mhz = NAN, mem_clock_mhz = NAN, temperature_c = NAN, power_w = NAN;  // NaN: not readable
  std::int64_t clock_event_reasons = -1;  // NVML's nvmlClocksEventReason* bitmask; -1: not readable
};

// One GPU's live readings.
class TelemetrySource {
 public:
  virtual ~TelemetrySource() = default;
  virtual TelemetrySample read() = 0;  // must not throw; unreadable fields stay NaN / -1
};

// Reads `source` at start(), every `interval_s` on a background thread, and at stop().
class TelemetrySampler {
 public:
  // Throws std::invalid_argument for an interval that is not positive or an empty clock.
  TelemetrySampler(TelemetrySource& source, double interval_s, std::function<double()> clock);
  ~TelemetrySampler();  // stops the thread if running, without a last sample
  TelemetrySampler(const TelemetrySampler&) = delete;
  TelemetrySampler& operator=(const TelemetrySampler&) = delete;

  void start();                          // clears earlier samples, takes one sample now
  std::vector<TelemetrySample> stop();   // takes one more sample, joins, returns all in time order

 private:
  void take();
  void loop();
  void join();

  TelemetrySource& source_;
  double interval_s_;
  std::function<double()> clock_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mutex_
  std::thread thread_;
  // Touched by start()/stop() only while no thread runs, and by the thread in between.
  std::vector<TelemetrySample> samples_;
};

// Once per run, per rank.
struct PeerLink {
  std::string pci_bus_id;       // normalize_pci_bus_id form
  int nvlinks = 0;              // active NVLinks from this GPU straight to that one
  std::string common_ancestor;  // "internal", "single", "multiple", "hostbridge", "node", "system"; "" unknown
};

struct GpuStatic {
  double max_sm_clock_mhz = NAN, max_mem_clock_mhz = NAN, power_limit_w = NAN;
  int pcie_gen = -1, pcie_width = -1, pcie_max_gen = -1, pcie_max_width = -1;
  int nvlinks_active = -1;
  std::vector<PeerLink> peers;  // every other GPU NVML sees on this node
};

struct GpuTelemetry {
  std::string unavailable;  // "" when `source` works, else one sentence why not
  std::unique_ptr<TelemetrySource> source;
  GpuStatic info;
};

// Opens NVML and the GPU with this PCI bus id ("0000:18:00.0" as cudaDeviceGetPCIBusId writes it).
GpuTelemetry open_gpu_telemetry(const std::string& pci_bus_id, const std::string& library = "libnvidia-ml.so.1");
// The same on an NVML already opened (tests pass one with fake entry points).
GpuTelemetry open_gpu_telemetry(const std::string& pci_bus_id, std::shared_ptr<const nvml::Library> library);

// "dddd:bb:dd.f", lower case, the form sysfs uses; NVML's 8-digit domain and upper case, or a
// missing domain, give the same. "" when `id` is not a PCI bus id.
std::string normalize_pci_bus_id(const std::string& id);

// CPU/NUMA affinity of a PCI device from sysfs; -1 / "" when unknown.
int pci_numa_node(const std::string& pci_bus_id);
std::string pci_local_cpulist(const std::string& pci_bus_id);

}  // namespace gpuscale
