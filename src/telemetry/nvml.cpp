#include "telemetry/nvml.hpp"

#include <dlfcn.h>

#include <utility>

namespace gpuscale::nvml {

Library::~Library() {
  if (api_.Shutdown) api_.Shutdown();  // NVML reference-counts init/shutdown; the result has no use here
  if (dl_handle_) dlclose(dl_handle_);
}

std::string Library::error(const char* call, nvmlReturn_t rc) const {
  const char* text = api_.ErrorString ? api_.ErrorString(rc) : nullptr;
  return std::string(call) + " failed: " + (text ? text : "NVML error " + std::to_string(rc));
}

namespace {

// Without these nothing works; every other entry point is optional and leaves its field unknown.
const char* missing_core(const Api& api) {
  if (!api.Init_v2) return "nvmlInit_v2";
  if (!api.Shutdown) return "nvmlShutdown";
  if (!api.ErrorString) return "nvmlErrorString";
  if (!api.DeviceGetHandleByPciBusId_v2) return "nvmlDeviceGetHandleByPciBusId_v2";
  return nullptr;
}

template <typename Fn>
void resolve(void* handle, const char* name, Fn& out) {
  void* sym = dlsym(handle, name);
  // POSIX guarantees object-to-function pointer conversion for dlsym results.
  out = reinterpret_cast<Fn>(sym);
}

}  // namespace

Opened init_library(const Api& api, void* dl_handle, const std::string& name) {
  auto fail = [&](std::string why) {
    if (dl_handle) dlclose(dl_handle);
    return Opened{nullptr, std::move(why)};
  };
  if (const char* missing = missing_core(api)) return fail(name + " lacks the NVML entry point " + missing + ".");
  if (const nvmlReturn_t rc = api.Init_v2(); rc != NVML_SUCCESS) {
    const char* text = api.ErrorString(rc);
    return fail("nvmlInit_v2 from " + name + " failed: " + (text ? text : "NVML error " + std::to_string(rc)) + ".");
  }
  return Opened{std::make_shared<const Library>(api, dl_handle), ""};
}

Opened open_library(const std::string& path) {
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = dlerror();
    return Opened{nullptr, path + " could not be loaded: " + (err ? err : "unknown dlopen error") + "."};
  }

  Api api;
  resolve(handle, "nvmlInit_v2", api.Init_v2);
  resolve(handle, "nvmlShutdown", api.Shutdown);
  resolve(handle, "nvmlErrorString", api.ErrorString);
  resolve(handle, "nvmlDeviceGetHandleByPciBusId_v2", api.DeviceGetHandleByPciBusId_v2);
  if (const char* missing = missing_core(api)) {
    dlerror();
    dlsym(handle, missing);  // again, for dlerror's own words
    const char* err = dlerror();
    std::string why = path + " lacks the NVML entry point " + missing + (err ? std::string(": ") + err : "") + ".";
    dlclose(handle);
    return Opened{nullptr, std::move(why)};
  }

  resolve(handle, "nvmlDeviceGetCount_v2", api.DeviceGetCount_v2);
  resolve(handle, "nvmlDeviceGetHandleByIndex_v2", api.DeviceGetHandleByIndex_v2);
  resolve(handle, "nvmlDeviceGetPciInfo_v3", api.DeviceGetPciInfo_v3);
  resolve(handle, "nvmlDeviceGetClockInfo", api.DeviceGetClockInfo);
  resolve(handle, "nvmlDeviceGetMaxClockInfo", api.DeviceGetMaxClockInfo);
  resolve(handle, "nvmlDeviceGetTemperatureV", api.DeviceGetTemperatureV);
  resolve(handle, "nvmlDeviceGetTemperature", api.DeviceGetTemperature);
  resolve(handle, "nvmlDeviceGetPowerUsage", api.DeviceGetPowerUsage);
  resolve(handle, "nvmlDeviceGetEnforcedPowerLimit", api.DeviceGetEnforcedPowerLimit);
  resolve(handle, "nvmlDeviceGetCurrentClocksEventReasons", api.DeviceGetCurrentClocksEventReasons);
  if (!api.DeviceGetCurrentClocksEventReasons)  // older drivers have only the old name
    resolve(handle, "nvmlDeviceGetCurrentClocksThrottleReasons", api.DeviceGetCurrentClocksEventReasons);
  resolve(handle, "nvmlDeviceGetCurrPcieLinkGeneration", api.DeviceGetCurrPcieLinkGeneration);
  resolve(handle, "nvmlDeviceGetCurrPcieLinkWidth", api.DeviceGetCurrPcieLinkWidth);
  resolve(handle, "nvmlDeviceGetMaxPcieLinkGeneration", api.DeviceGetMaxPcieLinkGeneration);
  resolve(handle, "nvmlDeviceGetMaxPcieLinkWidth", api.DeviceGetMaxPcieLinkWidth);
  resolve(handle, "nvmlDeviceGetNvLinkState", api.DeviceGetNvLinkState);
  resolve(handle, "nvmlDeviceGetNvLinkRemotePciInfo_v2", api.DeviceGetNvLinkRemotePciInfo_v2);
  resolve(handle, "nvmlDeviceGetTopologyCommonAncestor", api.DeviceGetTopologyCommonAncestor);
  dlerror();  // optional entry points that were absent leave an error behind; clear it
  return init_library(api, handle, path);
}

}  // namespace gpuscale::nvml
