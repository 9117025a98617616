// Shared-memory tiling: each block stages 32 x 32 tiles of A and B, so every
// element loaded from global memory is used 32 times.
#include <cuda_runtime.h>

#include "device/cuda/cuda_errors.hpp"
#include "element.cuh"
#include "gemm_kernels.hpp"

namespace gpuscale::kernels {

namespace {
constexpr int kTile = 32;

template <class T>
__global__ void gemm_tiled(int m, int n, int k, const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c) {
  using E = Element<T>;
  using Acc = typename E::Acc;
  __shared__ Acc as[kTile][kTile];
  __shared__ Acc bs[kTile][kTile + 1];  // +1: no bank conflicts on the column reads
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int i = blockIdx.y * kTile + ty;
  const int j = blockIdx.x * kTile + tx;
  Acc s = 0;
  for (int p0 = 0; p0 < k; p0 += kTile) {
    as[ty][tx] = (i < m && p0 + tx < k) ? E::to_acc(a[static_cast<size_t>(i) * k + p0 + tx]) : Acc(0);
    bs[ty][tx] = (p0 + ty < k && j < n) ? E::to_acc(b[static_cast<size_t>(p0 + ty) * n + j]) : Acc(0);
    __syncthreads();
#pragma unroll
    for (int q = 0; q < kTile; ++q) s += as[ty][q] * bs[q][tx];
    __syncthreads();
  }
  if (i < m && j < n) c[static_cast<size_t>(i) * n + j] = E::from_acc(s);
}

template <class T>
int launch(int m, int n, int k, const void* a, const void* b, void* c, void* stream) {
  const dim3 block(kTile, kTile);
  const dim3 grid((n + kTile - 1) / kTile, (m + kTile - 1) / kTile);
  return cuda::checked_launch([&] {
    gemm_tiled<T><<<grid, block, 0, static_cast<cudaStream_t>(stream)>>>(m, n, k, static_cast<const T*>(a),
                                                                          static_cast<const T*>(b), static_cast<T*>(c));
  });
}
}  // namespace

int launch_gemm_tiled(DType t, int m, int n, int k, const void* a, const void* b, void* c, void* stream) {
  if (t == DType::tf32) return static_cast<int>(cudaErrorInvalidValue);  // a cuBLAS math mode, not ours
  return with_element_type(t, [&](auto tag) { return launch<typename decltype(tag)::type>(m, n, k, a, b, c, stream); });
}

}  // namespace gpuscale::kernels
