#include "device/backend.hpp"

#include "core/error.hpp"
#include "device/cpu_device.hpp"

namespace gpuscale {

namespace {
// The device layer for CUDA is not part of this version: a usable GPU is
// reported as such, and work still runs on the CPU backend.
constexpr bool kCudaDeviceImplemented = false;
}  // namespace

BackendChoice choose_backend(const std::string& requested, const CudaStatus& cuda) {
  if (requested == "cpu") return {"cpu", "backend \"cpu\" requested"};
  std::string why;
  if (!cuda.usable) {
    why = "no usable CUDA device: " + cuda.reason;
  } else if (!kCudaDeviceImplemented) {
    why = std::to_string(cuda.device_count) + " CUDA device(s) found, but this gpuscale version has no CUDA device layer yet";
  } else {
    return {"cuda", requested == "auto" ? "backend auto: a CUDA device is usable" : "backend \"cuda\" requested"};
  }
  if (requested == "cuda") throw InputError("backend \"cuda\" cannot run: " + why);
  return {"cpu", why + "; running on the CPU backend"};
}

std::unique_ptr<Device> make_device(const BackendChoice& choice) {
  if (choice.backend != "cpu") throw RuntimeError("backend \"" + choice.backend + "\" has no device implementation");
  return std::make_unique<CpuDevice>();
}

}  // namespace gpuscale
