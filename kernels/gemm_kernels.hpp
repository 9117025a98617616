// Host launch functions of our CUDA kernels. This header needs no CUDA
// headers: streams pass as void* (a cudaStream_t) and each function returns
// the cudaError_t of its launch as an int (0 = cudaSuccess), for the caller's
// checks to name.
#pragma once

#include <cstddef>

#include "device/dtype.hpp"

namespace gpuscale::kernels {

// C = A * B, row-major, A m x k, B k x n, C m x n. fp64, fp32, fp16, bf16;
// accumulation in fp64 for fp64, fp32 otherwise.
int launch_gemm_naive(DType t, int m, int n, int k, const void* a, const void* b, void* c, void* stream);
// The same with 32 x 32 tiles of A and B staged in shared memory.
int launch_gemm_tiled(DType t, int m, int n, int k, const void* a, const void* b, void* c, void* stream);
// Each thread computes an 8 x 8 tile of C in registers from 128 x 128 block
// tiles, with 16-byte loads where rows allow: fp64, fp32.
int launch_gemm_blocked(DType t, int m, int n, int k, const void* a, const void* b, void* c, void* stream);
// Tensor cores through WMMA (16 x 16 x 16 fragments, fp32 accumulation): fp16, bf16; any m, n, k.
int launch_gemm_tensor(DType t, int m, int n, int k, const void* a, const void* b, void* c, void* stream);
// Tensor cores through mma.sync (m16n8k16, fp32 accumulation) fed by ldmatrix
// from shared memory, 128 x 256 block tiles: fp16, bf16; any m, n, k.
int launch_gemm_mma(DType t, int m, int n, int k, const void* a, const void* b, void* c, void* stream);
// The same with a multi-stage cp.async pipeline: the next tiles load while
// these are multiplied (where k and n are multiples of 8; else as launch_gemm_mma).
int launch_gemm_mma_async(DType t, int m, int n, int k, const void* a, const void* b, void* c, void* stream);

// Tiles to compare on a GPU (bench/gemm_tiles); tile 0 of each is the one the shipped kernel runs. Each
// launch_*_tile needs rows of A, B and C that start on 16-byte boundaries (k and n multiples of 8 halves or 4
// floats or 2 doubles, aligned matrices), else it returns cudaErrorInvalidValue.
// launch_gemm_blocked with a block covering bm x bn of C (8 x 8 per thread), bk of k per step: fp32, fp64.
struct BlockedTile {
  int bm, bn, bk;
};
int gemm_blocked_tile_count();
BlockedTile gemm_blocked_tile(int tile);
int launch_gemm_blocked_tile(int tile, DType t, int m, int n, int k, const void* a, const void* b, void* c,
                             void* stream);
// launch_gemm_mma_async with a block covering bm x bn of C with warps_m x warps_n warps, bk of k per step,
// `stages` steps deep: fp16, bf16.
struct MmaTile {
  int bm, bn, bk, warps_m, warps_n, stages;
};
int gemm_mma_tile_count();
MmaTile gemm_mma_tile(int tile);
int launch_gemm_mma_tile(int tile, DType t, int m, int n, int k, const void* a, const void* b, void* c, void* stream);

// *acc = (accumulate ? *acc : 0) + sum of x[i]^2, in fp64. acc is device memory.
int launch_sum_squares(DType t, const void* x, std::size_t count, double* acc, bool accumulate, void* stream);

}  // namespace gpuscale::kernels
