// One thread per element of C: the baseline every other kernel must beat.
#include <cuda_runtime.h>

#include "device/cuda/cuda_errors.hpp"
#include "element.cuh"
#include "gemm_kernels.hpp"

namespace gpuscale::kernels {

namespace {
template <class T>
__global__ void gemm_naive(int m, int n, int k, const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c) {
  using E = Element<T>;
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  const int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= m || j >= n) return;
  typename E::Acc s = 0;
  for (int p = 0; p < k; ++p) s += E::to_acc(a[static_cast<size_t>(i) * k + p]) * E::to_acc(b[static_cast<size_t>(p) * n + j]);
  c[static_cast<size_t>(i) * n + j] = E::from_acc(s);
}

template <class T>
int launch(int m, int n, int k, const void* a, const void* b, void* c, void* stream) {
  const dim3 block(16, 16);
  const dim3 grid((n + block.x - 1) / block.x, (m + block.y - 1) / block.y);
  return cuda::checked_launch([&] {
    gemm_naive<T><<<grid, block, 0, static_cast<cudaStream_t>(stream)>>>(m, n, k, static_cast<const T*>(a),
                                                                          static_cast<const T*>(b), static_cast<T*>(c));
  });
}
}  // namespace

int launch_gemm_naive(DType t, int m, int n, int k, const void* a, const void* b, void* c, void* stream) {
  if (t == DType::tf32) return static_cast<int>(cudaErrorInvalidValue);  // a cuBLAS math mode, not ours
  return with_element_type(t, [&](auto tag) { return launch<typename decltype(tag)::type>(m, n, k, a, b, c, stream); });
}

}  // namespace gpuscale::kernels
