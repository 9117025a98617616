#include "device/capabilities.hpp"

namespace gpuscale {

std::string gemm_unsupported(Backend backend, GemmImpl impl, DType t) {
  const std::string what = std::string("gemm impl '") + gemm_impl_name(impl) + "' with dtype " + dtype_name(t);
  if (backend == Backend::cpu) {
    if (impl != GemmImpl::vendor && impl != GemmImpl::naive) {
      return what + " needs the CUDA backend (the CPU backend has impl vendor, naive)";
    }
    if (t != DType::fp64 && t != DType::fp32) {
      return what + " needs the CUDA backend (the CPU backend has dtype fp64, fp32)";
    }
    return "";
  }
  switch (impl) {
    case GemmImpl::vendor: return "";
    case GemmImpl::naive:
    case GemmImpl::tiled:
      if (t == DType::tf32) return what + " is not available: tf32 is a cuBLAS math mode (use impl vendor)";
      return "";
    case GemmImpl::blocked:
      if (t != DType::fp64 && t != DType::fp32) return what + " is not available: the register-blocked kernel takes fp64, fp32";
      return "";
    case GemmImpl::tensor:
    case GemmImpl::mma:
    case GemmImpl::mma_async:
      if (t != DType::fp16 && t != DType::bf16) {
        return what + " is not available: the tensor-core kernels (tensor, mma, mma_async) take fp16, bf16";
      }
      return "";
  }
  return what + " is not available";
}

}  // namespace gpuscale
