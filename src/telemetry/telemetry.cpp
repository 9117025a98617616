#include "telemetry/telemetry.hpp"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "telemetry/nvml.hpp"

namespace gpuscale {

// ---- sampler ----------------------------------------------------------------------------------

TelemetrySampler::TelemetrySampler(TelemetrySource& source, double interval_s, std::function<double()> clock)
    : source_(source), interval_s_(interval_s), clock_(std::move(clock)) {
  if (!(interval_s_ > 0)) throw std::invalid_argument("telemetry interval must be positive seconds");
  if (!clock_) throw std::invalid_argument("telemetry sampler needs a clock");
}

TelemetrySampler::~TelemetrySampler() { join(); }

void TelemetrySampler::take() {
  const double t = clock_();
  TelemetrySample s = source_.read();
  s.time_s = t;
  samples_.push_back(s);
}

void TelemetrySampler::join() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void TelemetrySampler::loop() {
  using steady = std::chrono::steady_clock;
  const auto period = std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(interval_s_));
  auto next = steady::now() + period;  // fixed ticks, so slow reads do not stretch the interval
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_until(lock, next, [this] { return stopping_; })) {
    lock.unlock();
    take();
    lock.lock();
    next += period;
    const auto now = steady::now();
    if (next < now) next = now + period;  // fell behind (a read took longer than the interval): no burst
  }
}

void TelemetrySampler::start() {
  join();
  samples_.clear();
  take();
  stopping_ = false;  // no thread runs here
  thread_ = std::thread([this] { loop(); });
}

std::vector<TelemetrySample> TelemetrySampler::stop() {
  if (!thread_.joinable()) return {};
  join();
  take();
  return std::move(samples_);
}

// ---- PCI bus ids and sysfs --------------------------------------------------------------------

namespace {

std::optional<unsigned long> parse_hex(std::string_view s, unsigned long max) {
  if (s.empty() || s.size() > 8) return std::nullopt;
  unsigned long v = 0;
  for (const char c : s) {
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return std::nullopt;
    v = v * 16 + static_cast<unsigned long>(d);
  }
  if (v > max) return std::nullopt;
  return v;
}

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  return line;
}

std::string sysfs_device_file(const std::string& pci_bus_id, const char* file) {
  const std::string id = normalize_pci_bus_id(pci_bus_id);  // also keeps odd input out of the path
  if (id.empty()) return "";
  return first_line("/sys/bus/pci/devices/" + id + "/" + file);
}

}  // namespace

std::string normalize_pci_bus_id(const std::string& id) {
  // [domain:]bus:device[.function]
  std::string_view s(id);
  std::string_view domain = "0";
  const auto c1 = s.find(':');
  if (c1 == std::string_view::npos) return "";
  if (s.find(':', c1 + 1) != std::string_view::npos) {
    domain = s.substr(0, c1);
    s.remove_prefix(c1 + 1);
  }
  const auto colon = s.find(':');
  const std::string_view bus_s = s.substr(0, colon);
  std::string_view rest = s.substr(colon + 1);
  std::string_view function_s = "0";
  if (const auto dot = rest.find('.'); dot != std::string_view::npos) {
    function_s = rest.substr(dot + 1);
    rest = rest.substr(0, dot);
  }
  const auto dom = parse_hex(domain, 0xffffffffUL), bus = parse_hex(bus_s, 0xff), dev = parse_hex(rest, 0x1f),
             fn = parse_hex(function_s, 7);
  if (!dom || !bus || !dev || !fn) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04lx:%02lx:%02lx.%lx", *dom, *bus, *dev, *fn);
  return buf;
}

int pci_numa_node(const std::string& pci_bus_id) {
  const std::string s = sysfs_device_file(pci_bus_id, "numa_node");
  try {
    std::size_t used = 0;
    const int node = std::stoi(s, &used);
    return used == s.size() && node >= 0 ? node : -1;
  } catch (const std::logic_error&) {  // empty or not a number
    return -1;
  }
}

std::string pci_local_cpulist(const std::string& pci_bus_id) { return sysfs_device_file(pci_bus_id, "local_cpulist"); }

// ---- NVML -------------------------------------------------------------------------------------

namespace {

using nvml::NVML_SUCCESS;

// An entry point the driver lacks counts as a failed call: its field stays unknown.
template <typename Fn, typename... Args>
bool ok(Fn fn, Args... args) {
  return fn != nullptr && fn(args...) == NVML_SUCCESS;
}

std::string bus_id_of(const nvml::nvmlPciInfo_t& pci) {
  return normalize_pci_bus_id(std::string(pci.busId, strnlen(pci.busId, sizeof pci.busId)));
}

std::string topology_level_name(nvml::nvmlGpuTopologyLevel_t level) {
  switch (level) {
    case 0: return "internal";
    case 10: return "single";
    case 20: return "multiple";
    case 30: return "hostbridge";
    case 40: return "node";
    case 50: return "system";
    default: return "level " + std::to_string(level);
  }
}

class NvmlSource final : public TelemetrySource {
 public:
  NvmlSource(std::shared_ptr<const nvml::Library> library, nvml::nvmlDevice_t device)
      : library_(std::move(library)), device_(device) {}

  TelemetrySample read() override {
    const nvml::Api& a = library_->api();
    TelemetrySample s;
    unsigned int v = 0;
    if (ok(a.DeviceGetClockInfo, device_, nvml::NVML_CLOCK_SM, &v)) s.sm_clock_mhz = v;
    if (ok(a.DeviceGetClockInfo, device_, nvml::NVML_CLOCK_MEM, &v)) s.mem_clock_mhz = v;
    nvml::nvmlTemperature_v1_t t{nvml::nvmlTemperature_v1, nvml::NVML_TEMPERATURE_GPU, 0};
    if (ok(a.DeviceGetTemperatureV, device_, &t))
      s.temperature_c = t.temperature;
    else if (ok(a.DeviceGetTemperature, device_, nvml::NVML_TEMPERATURE_GPU, &v))  // drivers before the V form
      s.temperature_c = v;
    if (ok(a.DeviceGetPowerUsage, device_, &v)) s.power_w = v / 1000.0;
    unsigned long long reasons = 0;
    if (ok(a.DeviceGetCurrentClocksEventReasons, device_, &reasons))
      s.clock_event_reasons = static_cast<std::int64_t>(reasons);
    return s;
  }

 private:
  std::shared_ptr<const nvml::Library> library_;  // keeps NVML initialised while device_ is in use
  nvml::nvmlDevice_t device_;
};

GpuStatic read_static(const nvml::Api& a, nvml::nvmlDevice_t device, std::string own_id) {
  GpuStatic info;
  unsigned int v = 0;
  if (ok(a.DeviceGetMaxClockInfo, device, nvml::NVML_CLOCK_SM, &v)) info.max_sm_clock_mhz = v;
  if (ok(a.DeviceGetMaxClockInfo, device, nvml::NVML_CLOCK_MEM, &v)) info.max_mem_clock_mhz = v;
  if (ok(a.DeviceGetEnforcedPowerLimit, device, &v)) info.power_limit_w = v / 1000.0;
  if (ok(a.DeviceGetCurrPcieLinkGeneration, device, &v)) info.pcie_gen = static_cast<int>(v);
  if (ok(a.DeviceGetCurrPcieLinkWidth, device, &v)) info.pcie_width = static_cast<int>(v);
  if (ok(a.DeviceGetMaxPcieLinkGeneration, device, &v)) info.pcie_max_gen = static_cast<int>(v);
  if (ok(a.DeviceGetMaxPcieLinkWidth, device, &v)) info.pcie_max_width = static_cast<int>(v);

  nvml::nvmlPciInfo_t pci{};
  if (ok(a.DeviceGetPciInfo_v3, device, &pci) && !bus_id_of(pci).empty()) own_id = bus_id_of(pci);

  // Links that do not exist or are not supported answer an error; the count stays unknown
  // only when no link answered at all.
  std::map<std::string, int> links_to;
  int active = 0;
  bool answered = false;
  for (unsigned int link = 0; link < nvml::NVML_NVLINK_MAX_LINKS; ++link) {
    nvml::nvmlEnableState_t state = 0;
    if (!ok(a.DeviceGetNvLinkState, device, link, &state)) continue;
    answered = true;
    if (state != nvml::NVML_FEATURE_ENABLED) continue;
    ++active;
    nvml::nvmlPciInfo_t remote{};
    if (ok(a.DeviceGetNvLinkRemotePciInfo_v2, device, link, &remote)) ++links_to[bus_id_of(remote)];
  }
  if (answered) info.nvlinks_active = active;

  unsigned int count = 0;
  if (!ok(a.DeviceGetCount_v2, &count)) return info;
  for (unsigned int i = 0; i < count; ++i) {
    nvml::nvmlDevice_t other = nullptr;
    nvml::nvmlPciInfo_t other_pci{};
    // A GPU this process may not open (another container's) is not a peer it can use.
    if (!ok(a.DeviceGetHandleByIndex_v2, i, &other) || !ok(a.DeviceGetPciInfo_v3, other, &other_pci)) continue;
    PeerLink peer;
    peer.pci_bus_id = bus_id_of(other_pci);
    if (other == device || peer.pci_bus_id == own_id) continue;
    if (const auto it = links_to.find(peer.pci_bus_id); it != links_to.end()) peer.nvlinks = it->second;
    nvml::nvmlGpuTopologyLevel_t level = 0;
    if (ok(a.DeviceGetTopologyCommonAncestor, device, other, &level)) peer.common_ancestor = topology_level_name(level);
    info.peers.push_back(std::move(peer));
  }
  return info;
}

}  // namespace

GpuTelemetry open_gpu_telemetry(const std::string& pci_bus_id, std::shared_ptr<const nvml::Library> library) {
  GpuTelemetry out;
  if (!library) {
    out.unavailable = "NVML was not opened.";
    return out;
  }
  const nvml::Api& a = library->api();
  nvml::nvmlDevice_t device = nullptr;
  if (const auto rc = a.DeviceGetHandleByPciBusId_v2(pci_bus_id.c_str(), &device); rc != NVML_SUCCESS) {
    out.unavailable = "NVML found no GPU at PCI bus id '" + pci_bus_id + "' (" +
                      library->error("nvmlDeviceGetHandleByPciBusId_v2", rc) + ").";
    return out;
  }
  out.info = read_static(a, device, normalize_pci_bus_id(pci_bus_id));
  out.source = std::make_unique<NvmlSource>(std::move(library), device);
  return out;
}

GpuTelemetry open_gpu_telemetry(const std::string& pci_bus_id, const std::string& library) {
  nvml::Opened opened = nvml::open_library(library);
  if (!opened.library) {
    GpuTelemetry out;
    out.unavailable = std::move(opened.why_not);
    return out;
  }
  return open_gpu_telemetry(pci_bus_id, std::move(opened.library));
}

}  // namespace gpuscale
