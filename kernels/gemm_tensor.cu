// Tensor cores through WMMA: each warp computes one 16 x 16 tile of C from
// 16 x 16 tiles of A and B staged in shared memory (zero-padded at the
// edges, so any m, n, k work), accumulating in fp32.
#include <cuda_runtime.h>
#include <mma.h>

#include "device/cuda/cuda_errors.hpp"
#include "element.cuh"
#include "gemm_kernels.hpp"

namespace gpuscale::kernels {

namespace {
constexpr int kWarps = 4;  // warps per block, each on its own tile of C (a 2 x 2 block of tiles)
constexpr int kT = 16;

template <class T>
__global__ void gemm_tensor(int m, int n, int k, const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800  // bf16 fragments need sm_80; fp16 would do with sm_70
  using namespace nvcuda;
  using E = Element<T>;
  __shared__ __align__(32) T as[kWarps][kT * kT];
  __shared__ __align__(32) T bs[kWarps][kT * kT];
  __shared__ __align__(32) float cs[kWarps][kT * kT];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int tile_i = (blockIdx.y * 2 + warp / 2) * kT;  // first row of this warp's C tile
  const int tile_j = (blockIdx.x * 2 + warp % 2) * kT;  // first column
  wmma::fragment<wmma::accumulator, kT, kT, kT, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int p0 = 0; p0 < k; p0 += kT) {
    for (int e = lane; e < kT * kT; e += 32) {
      const int r = e / kT, q = e % kT;
      const int ai = tile_i + r, ap = p0 + q, bp = p0 + r, bj = tile_j + q;
      as[warp][e] = (ai < m && ap < k) ? a[static_cast<size_t>(ai) * k + ap] : E::from_acc(0.0f);
      bs[warp][e] = (bp < k && bj < n) ? b[static_cast<size_t>(bp) * n + bj] : E::from_acc(0.0f);
    }
    __syncwarp();
    wmma::fragment<wmma::matrix_a, kT, kT, kT, T, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, kT, kT, kT, T, wmma::row_major> fb;
    wmma::load_matrix_sync(fa, as[warp], kT);
    wmma::load_matrix_sync(fb, bs[warp], kT);
    wmma::mma_sync(acc, fa, fb, acc);
    __syncwarp();
  }
  wmma::store_matrix_sync(cs[warp], acc, kT, wmma::mem_row_major);
  __syncwarp();
  for (int e = lane; e < kT * kT; e += 32) {
    const int i = tile_i + e / kT, j = tile_j + e % kT;
    if (i < m && j < n) c[static_cast<size_t>(i) * n + j] = E::from_acc(cs[warp][e]);
  }
#else
  __trap();  // built for an architecture without bf16 tensor cores: fail loudly, never return garbage
#endif
}

template <class T>
int launch(int m, int n, int k, const void* a, const void* b, void* c, void* stream) {
  const dim3 block(32 * kWarps);
  const dim3 grid((n + 2 * kT - 1) / (2 * kT), (m + 2 * kT - 1) / (2 * kT));
  return cuda::checked_launch([&] {
    gemm_tensor<T><<<grid, block, 0, static_cast<cudaStream_t>(stream)>>>(
        m, n, k, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(c));
  });
}
}  // namespace

int launch_gemm_tensor(DType t, int m, int n, int k, const void* a, const void* b, void* c, void* stream) {
  switch (t) {
    case DType::fp16: return launch<__half>(m, n, k, a, b, c, stream);
    case DType::bf16: return launch<__nv_bfloat16>(m, n, k, a, b, c, stream);
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}

}  // namespace gpuscale::kernels
