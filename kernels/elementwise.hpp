// Host launch functions of our elementwise kernels. Like gemm_kernels.hpp,
// this header needs no CUDA headers: the stream passes as void* (a
// cudaStream_t) and the cudaError_t of the launch comes back as an int.
#pragma once

#include <cstddef>

#include "device/dtype.hpp"

namespace gpuscale::kernels {

// r[i] += a[i] * b[i] for i < count, one pass; fp32 and fp64 (other dtypes: cudaErrorInvalidValue).
int launch_multiply_add(DType t, const void* a, const void* b, void* r, std::size_t count, void* stream);

}  // namespace gpuscale::kernels
