// Register blocking, the step after tiled: each thread computes an 8 x 8 tile
// of C in registers instead of one element. A block of 256 threads covers a
// 128 x 128 tile of C and stages 128 x 8 of A and 8 x 128 of B in shared
// memory per step, so each value read from shared memory feeds 8 multiply-adds
// (tiled: 1) and each value read from global memory 128 (tiled: 32). A is
// stored transposed in shared memory, so a thread's 8 rows of A are
// contiguous; its 8 columns of B (and of C) are chunks of 16 bytes, 16 chunks
// apart (fp32: columns 4 tx.. and 64 + 4 tx..), so that neighbouring threads
// read neighbouring chunks of B, and C is stored in 256-byte runs. With A
// staged by columns of 32 rows, no access to shared memory has bank conflicts
// (kernels/simulate.py counts them; contiguous 8 columns read B at half speed
// in fp32, a quarter in fp64). Global loads are 16 bytes wide where every row
// starts on a 16-byte boundary (k and n multiples of 4 floats or 2 doubles),
// element by element otherwise. Edge tiles are zero-padded. (The block's tile
// is a template parameter: kTiles lists the ones built, for bench/gemm_tiles;
// the figures above are the shipped tile's.)
#include <cuda_runtime.h>

#include <iterator>

#include "device/cuda/cuda_errors.hpp"
#include "element.cuh"
#include "gemm_kernels.hpp"

namespace gpuscale::kernels {

namespace {
constexpr int kTM = 8, kTN = 8;  // a thread's tile of C

// A block's BM x BN tile of C, one kTM x kTN tile per thread, and BK of k per step.
template <int BM, int BN, int BK>
struct Tile {
  static constexpr int kBM = BM, kBN = BN, kBK = BK;
  static constexpr int kThreads = (BM / kTM) * (BN / kTN);
  static_assert(kThreads % 32 == 0 && BM % 32 == 0, "whole warps; a warp stages A from 32 consecutive rows");
};

// impl = "blocked": 16 x 16 threads on 128 x 128 of C.
constexpr int kBM = 128, kBN = 128, kBK = 8;

// The tiles launch_gemm_blocked_tile offers (bench/gemm_tiles): the default first.
constexpr BlockedTile kTiles[] = {
    {kBM, kBN, kBK},
    {128, 128, 16},
    {128, 64, 8},
    {64, 128, 8},
    {128, 64, 16},
};
template <std::size_t I>
using TileAt = Tile<kTiles[I].bm, kTiles[I].bn, kTiles[I].bk>;
using DefaultTile = TileAt<0>;

// 16 bytes of T: float4 or double2, made from and split into elements by name (registers, not memory).
template <class T>
struct Vec16;
template <>
struct Vec16<float> {
  using type = float4;
  __device__ static float4 make(const float* x) { return make_float4(x[0], x[1], x[2], x[3]); }
  __device__ static void split(const float4& v, float* x) {
    x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
  }
};
template <>
struct Vec16<double> {
  using type = double2;
  __device__ static double2 make(const double* x) { return make_double2(x[0], x[1]); }
  __device__ static void split(const double2& v, double* x) { x[0] = v.x, x[1] = v.y; }
};

// Vec: 16-byte loads and stores (rows of A, B and C start on 16-byte boundaries).
// fp32: at most 128 registers, so that 16 warps (two blocks of 256 threads) share an SM and hide each other's loads.
template <class T, bool Vec, class Tl>
__global__ void __launch_bounds__(Tl::kThreads, sizeof(T) == 4 ? 512 / Tl::kThreads : 1)
    gemm_blocked(int m, int n, int k, const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c) {
  constexpr int kBM = Tl::kBM, kBN = Tl::kBN, kBK = Tl::kBK, kThreads = Tl::kThreads;
  using V = typename Vec16<T>::type;
  constexpr int kV = sizeof(V) / sizeof(T);  // elements per 16 bytes
  constexpr int kChunks = kTN / kV, kChunkStride = kBN / kChunks;  // a thread's columns: kChunks runs of kV
  __shared__ __align__(16) T as[kBK][kBM];  // transposed: as[p][i] = A[i][p]
  __shared__ __align__(16) T bs[kBK][kBN];
  const int tid = threadIdx.x;
  // This thread's tile: rows ty * kTM.., columns c * kChunkStride + tx * kV.. for each chunk c.
  const int ty = tid / (kBN / kTN), tx = tid % (kBN / kTN);
  const int bm = blockIdx.y * kBM, bn = blockIdx.x * kBN;
  T acc[kTM][kTN] = {};
  for (int p0 = 0; p0 < k; p0 += kBK) {
    // A's kBM x kBK tile, kV elements of a row at a time: a warp reads the same kV columns of 32 consecutive rows,
    // so that each of its transposed stores fills consecutive words of a row of `as` (different banks).
    for (int e = tid; e < kBM * kBK / kV; e += kThreads) {
      const int i = e % kBM, p = (e / kBM) * kV;
      const int gi = bm + i, gp = p0 + p;
      const T* src = a + static_cast<size_t>(gi) * k + gp;
      if (Vec) {  // k % kV == 0: the kV elements are all inside or all outside
        V v{};
        if (gi < m && gp < k) v = *reinterpret_cast<const V*>(src);
        T x[kV];
        Vec16<T>::split(v, x);
#pragma unroll
        for (int q = 0; q < kV; ++q) as[p + q][i] = x[q];
      } else {
#pragma unroll
        for (int q = 0; q < kV; ++q) as[p + q][i] = (gi < m && gp + q < k) ? src[q] : T(0);
      }
    }
    // B's kBK x kBN tile.
    for (int e = tid; e < kBK * kBN / kV; e += kThreads) {
      const int p = e / (kBN / kV), j = (e % (kBN / kV)) * kV;
      const int gp = p0 + p, gj = bn + j;
      const T* src = b + static_cast<size_t>(gp) * n + gj;
      if (Vec) {
        V v{};
        if (gp < k && gj < n) v = *reinterpret_cast<const V*>(src);
        *reinterpret_cast<V*>(&bs[p][j]) = v;
      } else {
#pragma unroll
        for (int q = 0; q < kV; ++q) bs[p][j + q] = (gp < k && gj + q < n) ? src[q] : T(0);
      }
    }
    __syncthreads();
#pragma unroll
    for (int p = 0; p < kBK; ++p) {
      T ra[kTM], rb[kTN];
#pragma unroll
      for (int i = 0; i < kTM; ++i) ra[i] = as[p][ty * kTM + i];
#pragma unroll
      for (int j = 0; j < kTN; ++j) rb[j] = bs[p][(j / kV) * kChunkStride + tx * kV + j % kV];
#pragma unroll
      for (int i = 0; i < kTM; ++i) {
#pragma unroll
        for (int j = 0; j < kTN; ++j) acc[i][j] += ra[i] * rb[j];
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    const int gi = bm + ty * kTM + i;
    if (gi >= m) break;
    T* row = c + static_cast<size_t>(gi) * n;
#pragma unroll
    for (int j = 0; j < kTN; j += kV) {
      const int gj = bn + (j / kV) * kChunkStride + tx * kV;
      if (Vec) {  // n % kV == 0: all kV columns are inside or none
        if (gj < n) *reinterpret_cast<V*>(row + gj) = Vec16<T>::make(&acc[i][j]);
      } else {
#pragma unroll
        for (int q = 0; q < kV; ++q) {
          if (gj + q < n) row[gj + q] = acc[i][j + q];
        }
      }
    }
  }
}

template <class T, bool Vec, class Tl = DefaultTile>
int launch_kernel(int m, int n, int k, const void* a, const void* b, void* c, cudaStream_t st) {
  const dim3 grid((n + Tl::kBN - 1) / Tl::kBN, (m + Tl::kBM - 1) / Tl::kBM);
  return cuda::checked_launch([&] {
    gemm_blocked<T, Vec, Tl><<<grid, Tl::kThreads, 0, st>>>(m, n, k, static_cast<const T*>(a), static_cast<const T*>(b),
                                                             static_cast<T*>(c));
  });
}

template <class T>
int launch(int m, int n, int k, const void* a, const void* b, void* c, void* stream) {
  const auto st = static_cast<cudaStream_t>(stream);
  if (rows_of_16_bytes<T>(n, k, a, b, c)) return launch_kernel<T, true>(m, n, k, a, b, c, st);
  return launch_kernel<T, false>(m, n, k, a, b, c, st);
}

// The blocked kernel with tile `tile` of kTiles (16-byte rows only).
template <class T>
int launch_tile(int tile, int m, int n, int k, const void* a, const void* b, void* c, void* stream) {
  if (!rows_of_16_bytes<T>(n, k, a, b, c)) return static_cast<int>(cudaErrorInvalidValue);
  const auto st = static_cast<cudaStream_t>(stream);
  return with_index<std::size(kTiles)>(tile, [&](auto i) {
    return launch_kernel<T, true, TileAt<decltype(i)::value>>(m, n, k, a, b, c, st);
  });
}
}  // namespace

int launch_gemm_blocked(DType t, int m, int n, int k, const void* a, const void* b, void* c, void* stream) {
  switch (t) {
    case DType::fp64: return launch<double>(m, n, k, a, b, c, stream);
    case DType::fp32: return launch<float>(m, n, k, a, b, c, stream);
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}

int gemm_blocked_tile_count() { return static_cast<int>(std::size(kTiles)); }

BlockedTile gemm_blocked_tile(int tile) { return kTiles[tile]; }

int launch_gemm_blocked_tile(int tile, DType t, int m, int n, int k, const void* a, const void* b, void* c,
                             void* stream) {
  switch (t) {
    case DType::fp64: return launch_tile<double>(tile, m, n, k, a, b, c, stream);
    case DType::fp32: return launch_tile<float>(tile, m, n, k, a, b, c, stream);
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}

}  // namespace gpuscale::kernels
