// NVML loaded at run time (dlopen), so the binary starts where there is no driver.
//
// The few declarations we need are copied from NVIDIA's nvml.h ("NVML VERSION: 13.3.29",
// as carried by github.com/NVIDIA/go-nvml, gen/nvml/nvml.h): signatures, enum values and
// the nvmlPciInfo_t / nvmlTemperature_v1_t layouts. C enums are int-sized on every ABI we
// build for, so they are declared as int here.
#pragma once

#include <memory>
#include <string>

namespace gpuscale::nvml {

struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;
using nvmlReturn_t = int;

constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr nvmlReturn_t NVML_ERROR_INVALID_ARGUMENT = 2;
constexpr nvmlReturn_t NVML_ERROR_NOT_SUPPORTED = 3;
constexpr nvmlReturn_t NVML_ERROR_NOT_FOUND = 6;
constexpr nvmlReturn_t NVML_ERROR_DRIVER_NOT_LOADED = 9;
constexpr nvmlReturn_t NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25;

using nvmlClockType_t = int;
constexpr nvmlClockType_t NVML_CLOCK_SM = 1;
constexpr nvmlClockType_t NVML_CLOCK_MEM = 2;

using nvmlTemperatureSensors_t = int;
constexpr nvmlTemperatureSensors_t NVML_TEMPERATURE_GPU = 0;

using nvmlEnableState_t = int;
constexpr nvmlEnableState_t NVML_FEATURE_ENABLED = 1;

using nvmlGpuTopologyLevel_t = int;  // NVML_TOPOLOGY_INTERNAL = 0, SINGLE = 10, ... SYSTEM = 50

// 18 before NVML 13.x, 36 since; older drivers answer INVALID_ARGUMENT past their last link.
constexpr unsigned NVML_NVLINK_MAX_LINKS = 36;

struct nvmlPciInfo_t {
  char busIdLegacy[16];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE, "%08X:%02X:%02X.0"
};
static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t must match nvml.h");

struct nvmlTemperature_v1_t {
  unsigned int version;  // nvmlTemperature_v1 = sizeof | 1 << 24 (NVML_STRUCT_VERSION)
  nvmlTemperatureSensors_t sensorType;
  int temperature;
};
constexpr unsigned int nvmlTemperature_v1 = unsigned(sizeof(nvmlTemperature_v1_t)) | (1U << 24U);

// The entry points, named as in nvml.h without the "nvml" prefix; null where the library lacks one.
struct Api {
  nvmlReturn_t (*Init_v2)() = nullptr;
  nvmlReturn_t (*Shutdown)() = nullptr;
  const char* (*ErrorString)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*DeviceGetHandleByPciBusId_v2)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*DeviceGetCount_v2)(unsigned int*) = nullptr;
  nvmlReturn_t (*DeviceGetHandleByIndex_v2)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*DeviceGetPciInfo_v3)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*DeviceGetClockInfo)(nvmlDevice_t, nvmlClockType_t, unsigned int*) = nullptr;
  nvmlReturn_t (*DeviceGetMaxClockInfo)(nvmlDevice_t, nvmlClockType_t, unsigned int*) = nullptr;
  nvmlReturn_t (*DeviceGetTemperatureV)(nvmlDevice_t, nvmlTemperature_v1_t*) = nullptr;
  nvmlReturn_t (*DeviceGetTemperature)(nvmlDevice_t, nvmlTemperatureSensors_t, unsigned int*) = nullptr;
  nvmlReturn_t (*DeviceGetPowerUsage)(nvmlDevice_t, unsigned int*) = nullptr;  // mW
  nvmlReturn_t (*DeviceGetEnforcedPowerLimit)(nvmlDevice_t, unsigned int*) = nullptr;  // mW
  // nvmlDeviceGetCurrentClocksEventReasons, or on older drivers nvmlDeviceGetCurrentClocksThrottleReasons.
  nvmlReturn_t (*DeviceGetCurrentClocksEventReasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*DeviceGetCurrPcieLinkGeneration)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*DeviceGetCurrPcieLinkWidth)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*DeviceGetMaxPcieLinkGeneration)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*DeviceGetMaxPcieLinkWidth)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*DeviceGetNvLinkState)(nvmlDevice_t, unsigned int, nvmlEnableState_t*) = nullptr;
  nvmlReturn_t (*DeviceGetNvLinkRemotePciInfo_v2)(nvmlDevice_t, unsigned int, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*DeviceGetTopologyCommonAncestor)(nvmlDevice_t, nvmlDevice_t, nvmlGpuTopologyLevel_t*) = nullptr;
};

// An initialised NVML: nvmlShutdown and dlclose when the last owner lets go. Sources share
// ownership, so handles they hold stay valid as long as they do.
class Library {
 public:
  Library(Api api, void* dl_handle) : api_(api), dl_handle_(dl_handle) {}
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  const Api& api() const { return api_; }
  // "<call> failed: <nvmlErrorString>", for reasons given to the user.
  std::string error(const char* call, nvmlReturn_t rc) const;

 private:
  Api api_;
  void* dl_handle_;
};

struct Opened {
  std::shared_ptr<const Library> library;  // null when NVML is not usable
  std::string why_not;                      // one sentence when library is null
};

// dlopen `path`, resolve the entry points, nvmlInit_v2.
Opened open_library(const std::string& path);
// The same from entry points already at hand (tests pass fakes); takes over dl_handle, may be null.
Opened init_library(const Api& api, void* dl_handle, const std::string& name);

}  // namespace gpuscale::nvml
