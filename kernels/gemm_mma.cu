// Tensor cores as the hardware sees them, the steps after WMMA (tensor):
//
// mma: each warp issues mma.sync m16n8k16 (fp16 or bf16 in, fp32
// accumulation) on a 64 x 64 tile of C held in registers, 32 instructions per
// k16 step, and reads its fragments straight from shared memory with ldmatrix
// (one instruction gives a warp a 16 x 16 tile of A, or two 16 x 8 tiles of
// B with .trans, since B is row-major): 8 ldmatrix per 32 mma. A block of 8
// warps covers 128 x 256 of C (CUTLASS's usual tile for this instruction)
// and stages 128 x 32 of A and 32 x 256 of B per step; rows of the staged
// tiles are padded by 16 bytes so that ldmatrix's eight rows fall in
// different banks. WMMA instead gave each warp a 16 x 16 tile of C, loaded
// its own 16 x 16 tiles of A and B, and round-tripped C through shared memory.
//
// mma_async: the same, with a kStages-deep cp.async pipeline: the tiles of
// the next kStages - 1 steps copy from global to shared memory
// asynchronously, without passing through registers, while this step's are
// multiplied.
//
// Rows are loaded 16 bytes (8 elements) at a time where k and n are
// multiples of 8; otherwise element by element (and mma_async runs as mma):
// edge tiles are zero-padded either way. The tile is a template parameter
// (Tile): kTiles lists the ones built, for bench/gemm_tiles; the figures
// above are the shipped tile's.
#include <cuda_runtime.h>

#include <bitset>
#include <iterator>
#include <mutex>

#include "device/cuda/cuda_errors.hpp"
#include "element.cuh"
#include "gemm_kernels.hpp"

namespace gpuscale::kernels {

namespace {
constexpr int kPad = 8;  // elements (16 bytes) after each staged row
constexpr int kMaxDevices = 64;  // device ordinals whose opt-in is remembered; others ask at every launch

// How a block tiles C: BM x BN of it with WarpsM x WarpsN warps, each on a (BM / WarpsM) x (BN / WarpsN) tile held
// in registers; BK of k staged per step, Stages steps deep in mma_async.
template <int BM, int BN, int BK, int WarpsM, int WarpsN, int Stages>
struct Tile {
  static constexpr int kBM = BM, kBN = BN, kBK = BK, kWarpsN = WarpsN, kStages = Stages;
  static constexpr int kWM = BM / WarpsM, kWN = BN / WarpsN;
  static constexpr int kMT = kWM / 16, kNT = kWN / 8;  // m16 x n8 tiles per warp
  static constexpr int kThreads = 32 * WarpsM * WarpsN;
  static constexpr int kAStride = BK + kPad, kBStride = BN + kPad;  // staged rows, in elements
  static constexpr int kStageElems = BM * kAStride + BK * kBStride;
  static_assert(kWM % 16 == 0 && kWN % 16 == 0, "m16 tiles per warp, and n8 tiles in pairs (one ldmatrix.x4.trans)");
  static_assert(BK % 32 == 0, "A is staged in runs of 4 chunks of 8 elements");
  static_assert(BM * BK / 8 % kThreads == 0 && BK * BN / 8 % kThreads == 0, "every thread stages as many chunks");
  template <class T>
  static constexpr int smem_bytes(int stages) {
    return stages * kStageElems * static_cast<int>(sizeof(T));
  }
};

// impl = "mma" and "mma_async": CUTLASS's usual tile for this instruction, 64 x 64 of C per warp.
constexpr int kBM = 128, kBN = 256, kBK = 32;
constexpr int kWarpsM = 2, kWarpsN = 4;
constexpr int kStages = 4;  // mma_async

// The tiles launch_gemm_mma_tile offers (bench/gemm_tiles): the default first.
constexpr MmaTile kTiles[] = {
    {kBM, kBN, kBK, kWarpsM, kWarpsN, kStages},
    {128, 256, 32, 2, 4, 3},
    {128, 256, 64, 2, 4, 3},
    {256, 128, 32, 4, 2, 4},
    {128, 128, 32, 2, 2, 4},
    {128, 128, 64, 2, 2, 3},
};
template <std::size_t I>
using TileAt = Tile<kTiles[I].bm, kTiles[I].bn, kTiles[I].bk, kTiles[I].warps_m, kTiles[I].warps_n, kTiles[I].stages>;
using DefaultTile = TileAt<0>;

__device__ unsigned smem_addr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
__device__ void ldmatrix_x4(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

__device__ void ldmatrix_x4_trans(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// d += a * b on one m16n8k16 tile.
template <class T>
__device__ void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1);

template <>
__device__ void mma_16816<__half>(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <>
__device__ void mma_16816<__nv_bfloat16>(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two adjacent elements of C in one 4-byte store.
__device__ void store_pair(__half* p, float x0, float x1) {
  *reinterpret_cast<__half2*>(p) = __floats2half2_rn(x0, x1);
}
__device__ void store_pair(__nv_bfloat16* p, float x0, float x1) {
  *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(x0, x1);
}

// 16 bytes from global to shared memory; zeros where `inside` is false (src is then not read).
__device__ void cp_async_16(void* dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(inside ? 16 : 0)
               : "memory");
}
__device__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// 8 elements (16 bytes) of a row into shared memory, of which the first `inside` lie inside the matrix (the
// rest are zeros). Vec: `inside` is 0 or 8, and the row is 16-byte aligned; Async (with Vec): through cp.async,
// which then reads `src` only where inside is 8.
template <class T, bool Vec, bool Async>
__device__ void stage_chunk(T* dst, const T* src, int inside) {
  if (Async) {
    cp_async_16(dst, src, inside > 0);
  } else if (Vec) {
    *reinterpret_cast<uint4*>(dst) = inside > 0 ? *reinterpret_cast<const uint4*>(src) : uint4{0, 0, 0, 0};
  } else {
#pragma unroll
    for (int q = 0; q < 8; ++q) dst[q] = q < inside ? src[q] : Element<T>::from_acc(0.0f);
  }
}

// One step's tiles: A rows bm.., columns p0.. into `as`; B rows p0.., columns bn.. into `bs`, 8 elements at a
// time. Vec: k % 8 == 0 and n % 8 == 0, so 8 elements are all inside or all outside.
template <class Tl, class T, bool Vec, bool Async>
__device__ void load_tiles(T* as, T* bs, const T* a, const T* b, int m, int n, int k, int bm, int bn, int p0) {
  const auto inside = [](bool row_inside, int left) { return row_inside ? min(8, max(0, left)) : 0; };
  // A: each warp instruction copies 4 chunks (64 bytes, two whole 32-byte sectors of global memory) of 8 rows, each
  // quarter of the warp one chunk of the 8 rows: 8 different banks, since padded rows are an odd number of chunks
  // long. Wider rows (kBK / 8 chunks) take kBK / 32 instructions.
  constexpr int kRuns = Tl::kBK / 32;  // runs of 4 chunks per row
  for (int e = threadIdx.x; e < Tl::kBM * Tl::kBK / 8; e += Tl::kThreads) {
    const int run = e / 32, lane = e % 32;
    const int i = run / kRuns * 8 + lane % 8, p = (run % kRuns * 4 + lane / 8) * 8;
    const int gi = bm + i, gp = p0 + p, count = inside(gi < m, k - gp);
    stage_chunk<T, Vec, Async>(as + i * Tl::kAStride + p, count > 0 ? a + static_cast<size_t>(gi) * k + gp : a, count);
  }
  for (int e = threadIdx.x; e < Tl::kBK * Tl::kBN / 8; e += Tl::kThreads) {
    const int p = e / (Tl::kBN / 8), j = (e % (Tl::kBN / 8)) * 8;
    const int gp = p0 + p, gj = bn + j, count = inside(gp < k, n - gj);
    stage_chunk<T, Vec, Async>(bs + p * Tl::kBStride + j, count > 0 ? b + static_cast<size_t>(gp) * n + gj : b, count);
  }
}

// The warp's tile of C += its rows of the staged A times its columns of the staged B.
template <class Tl, class T>
__device__ void multiply_stage(float (&acc)[Tl::kMT][Tl::kNT][4], const T* as, const T* bs, int wm, int wn, int lane) {
#pragma unroll
  for (int ks = 0; ks < Tl::kBK; ks += 16) {
    unsigned fa[Tl::kMT][4], fb[Tl::kNT][2];
    // A: lanes 0-15 give rows 0-15 at k 0, lanes 16-31 rows 0-15 at k 8: a0..a3 of the m16n8k16 layout.
#pragma unroll
    for (int mi = 0; mi < Tl::kMT; ++mi) {
      ldmatrix_x4(fa[mi], as + (wm + mi * 16 + lane % 16) * Tl::kAStride + ks + (lane / 16) * 8);
    }
    // B (k rows, n columns), transposed on the way: lanes 0-15 give k rows 0-15 at n 0 (b0, b1 of one n8
    // tile), lanes 16-31 the same rows at n 8 (of the next).
#pragma unroll
    for (int nj = 0; nj < Tl::kNT; nj += 2) {
      unsigned r[4];
      ldmatrix_x4_trans(r, bs + (ks + lane % 16) * Tl::kBStride + wn + nj * 8 + (lane / 16) * 8);
      fb[nj][0] = r[0], fb[nj][1] = r[1], fb[nj + 1][0] = r[2], fb[nj + 1][1] = r[3];
    }
#pragma unroll
    for (int mi = 0; mi < Tl::kMT; ++mi) {
#pragma unroll
      for (int ni = 0; ni < Tl::kNT; ++ni) mma_16816<T>(acc[mi][ni], fa[mi], fb[ni][0], fb[ni][1]);
    }
  }
}
#endif

// Async needs Vec. Shared memory: Tl::kStages stages with Async, else one.
template <class T, bool Vec, bool Async, class Tl>
__global__ void __launch_bounds__(Tl::kThreads)
    gemm_mma(int m, int n, int k, const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800  // bf16 mma and cp.async need sm_80
  static_assert(Vec || !Async, "cp.async copies 16-byte chunks");
  constexpr int kStages = Tl::kStages, kBK = Tl::kBK;
  extern __shared__ __align__(16) unsigned char smem[];
  T* const stages = reinterpret_cast<T*>(smem);
  const auto stage_a = [&](int s) { return stages + s * Tl::kStageElems; };
  const auto stage_b = [&](int s) { return stages + s * Tl::kStageElems + Tl::kBM * Tl::kAStride; };
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm = (warp / Tl::kWarpsN) * Tl::kWM, wn = (warp % Tl::kWarpsN) * Tl::kWN;  // the warp's tile in the block's
  const int bm = blockIdx.y * Tl::kBM, bn = blockIdx.x * Tl::kBN;
  const int steps = (k + kBK - 1) / kBK;
  float acc[Tl::kMT][Tl::kNT][4] = {};
  if (Async) {
    // Stage s holds step s, s + kStages, ...: kStages - 1 steps are in flight while one is multiplied.
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < steps) load_tiles<Tl, T, Vec, true>(stage_a(s), stage_b(s), a, b, m, n, k, bm, bn, s * kBK);
      cp_async_commit();  // empty groups too: the count waited for below stays right
    }
    for (int step = 0; step < steps; ++step) {
      cp_async_wait<kStages - 2>();  // this step's copies are done (this thread's)
      __syncthreads();               // ... and everyone's; and the stage refilled below is no longer read
      const int next = step + kStages - 1;
      if (next < steps) {
        load_tiles<Tl, T, Vec, true>(stage_a(next % kStages), stage_b(next % kStages), a, b, m, n, k, bm, bn,
                                     next * kBK);
      }
      cp_async_commit();
      multiply_stage<Tl, T>(acc, stage_a(step % kStages), stage_b(step % kStages), wm, wn, lane);
    }
    cp_async_wait<0>();
  } else {
    for (int step = 0; step < steps; ++step) {
      load_tiles<Tl, T, Vec, false>(stage_a(0), stage_b(0), a, b, m, n, k, bm, bn, step * kBK);
      __syncthreads();
      multiply_stage<Tl, T>(acc, stage_a(0), stage_b(0), wm, wn, lane);
      __syncthreads();
    }
  }
  // Lane l holds rows l / 4 and l / 4 + 8 of each m16n8 tile, columns 2 (l % 4) and the next.
#pragma unroll
  for (int mi = 0; mi < Tl::kMT; ++mi) {
#pragma unroll
    for (int ni = 0; ni < Tl::kNT; ++ni) {
      const int j = bn + wn + ni * 8 + (lane % 4) * 2;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int i = bm + wm + mi * 16 + lane / 4 + h * 8;
        if (i >= m) continue;
        T* row = c + static_cast<size_t>(i) * n;
        const float x0 = acc[mi][ni][2 * h], x1 = acc[mi][ni][2 * h + 1];
        if (Vec) {  // n even: both columns are inside or none; 4-byte aligned
          if (j < n) store_pair(row + j, x0, x1);
        } else {
          if (j < n) row[j] = Element<T>::from_acc(x0);
          if (j + 1 < n) row[j + 1] = Element<T>::from_acc(x1);
        }
      }
    }
  }
#else
  __trap();  // built for an architecture without these instructions: fail loudly, never return garbage
#endif
}

template <class T, bool Vec, bool Async, class Tl = DefaultTile>
int launch_kernel(int m, int n, int k, const void* a, const void* b, void* c, cudaStream_t stream) {
  const int smem = Tl::template smem_bytes<T>(Async ? Tl::kStages : 1);
  // Above 48 KiB a kernel must ask for its shared memory, once on each device it runs on (the attribute belongs
  // to the device's context): remembered per device ordinal, asked again on a device not seen yet.
  static std::mutex mu;
  static std::bitset<kMaxDevices> opted;
  int device = 0;
  if (const cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return static_cast<int>(e);
  {
    std::lock_guard<std::mutex> lock(mu);
    const bool known = device >= 0 && device < kMaxDevices;
    if (!known || !opted[device]) {
      const cudaError_t e =
          cudaFuncSetAttribute(gemm_mma<T, Vec, Async, Tl>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
      if (e != cudaSuccess) return static_cast<int>(e);
      if (known) opted[device] = true;
    }
  }
  const dim3 grid((n + Tl::kBN - 1) / Tl::kBN, (m + Tl::kBM - 1) / Tl::kBM);
  return cuda::checked_launch([&] {
    gemm_mma<T, Vec, Async, Tl><<<grid, Tl::kThreads, smem, stream>>>(m, n, k, static_cast<const T*>(a),
                                                                      static_cast<const T*>(b), static_cast<T*>(c));
  });
}

template <class T>
int launch(bool async, int m, int n, int k, const void* a, const void* b, void* c, void* stream) {
  const auto st = static_cast<cudaStream_t>(stream);
  if (!rows_of_16_bytes<T>(n, k, a, b, c)) return launch_kernel<T, false, false>(m, n, k, a, b, c, st);
  if (async) return launch_kernel<T, true, true>(m, n, k, a, b, c, st);
  return launch_kernel<T, true, false>(m, n, k, a, b, c, st);
}

int launch_typed(DType t, bool async, int m, int n, int k, const void* a, const void* b, void* c, void* stream) {
  switch (t) {
    case DType::fp16: return launch<__half>(async, m, n, k, a, b, c, stream);
    case DType::bf16: return launch<__nv_bfloat16>(async, m, n, k, a, b, c, stream);
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}

// mma_async with tile `tile` of kTiles (16-byte rows only).
template <class T>
int launch_tile(int tile, int m, int n, int k, const void* a, const void* b, void* c, void* stream) {
  if (!rows_of_16_bytes<T>(n, k, a, b, c)) return static_cast<int>(cudaErrorInvalidValue);
  const auto st = static_cast<cudaStream_t>(stream);
  return with_index<std::size(kTiles)>(tile, [&](auto i) {
    return launch_kernel<T, true, true, TileAt<decltype(i)::value>>(m, n, k, a, b, c, st);
  });
}
}  // namespace

int launch_gemm_mma(DType t, int m, int n, int k, const void* a, const void* b, void* c, void* stream) {
  return launch_typed(t, false, m, n, k, a, b, c, stream);
}

int launch_gemm_mma_async(DType t, int m, int n, int k, const void* a, const void* b, void* c, void* stream) {
  return launch_typed(t, true, m, n, k, a, b, c, stream);
}

int gemm_mma_tile_count() { return static_cast<int>(std::size(kTiles)); }

MmaTile gemm_mma_tile(int tile) { return kTiles[tile]; }

int launch_gemm_mma_tile(int tile, DType t, int m, int n, int k, const void* a, const void* b, void* c,
                         void* stream) {
  switch (t) {
    case DType::fp16: return launch_tile<__half>(tile, m, n, k, a, b, c, stream);
    case DType::bf16: return launch_tile<__nv_bfloat16>(tile, m, n, k, a, b, c, stream);
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}

}  // namespace gpuscale::kernels
