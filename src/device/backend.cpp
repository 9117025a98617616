#include "device/backend.hpp"

#include "core/error.hpp"
#include "device/cpu_device.hpp"
#ifdef GPUSCALE_HAVE_CUDA
#include "device/cuda_device.hpp"
#endif

namespace gpuscale {

BackendChoice choose_backend(const std::string& requested, const CudaStatus& cuda) {
  if (requested == "cpu") return {Backend::cpu, "backend \"cpu\" requested"};
  std::string why;
  if (!cuda.usable) {
    why = "no usable CUDA device: " + cuda.reason;
  } else {
    return {Backend::cuda, (requested == "auto" ? "backend auto: " : "backend \"cuda\" requested: ") +
                        std::to_string(cuda.device_count) + " CUDA device(s) usable"};
  }
  if (requested == "cuda") throw InputError("backend \"cuda\" cannot run: " + why);
  return {Backend::cpu, why + "; running on the CPU backend"};
}

std::unique_ptr<Device> make_device(const BackendChoice& choice, int local_rank) {
#ifdef GPUSCALE_HAVE_CUDA
  if (choice.backend == Backend::cuda) return make_cuda_device(local_rank);
#else
  (void)local_rank;
#endif
  if (choice.backend != Backend::cpu) {
    throw RuntimeError(std::string("backend \"") + backend_name(choice.backend) + "\" is not built into this gpuscale");
  }
  return std::make_unique<CpuDevice>();
}

}  // namespace gpuscale
