// Owning handles of CUDA and cuBLAS objects (destroyed with their owner, never
// throwing), and the cuBLAS workspace the CUDA backend gives every handle.
// Shared by the CUDA device and bench/gpu_bench, which sets up its bare loop
// the same way.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <type_traits>

namespace gpuscale::cuda {

struct StreamDeleter {
  void operator()(cudaStream_t s) const noexcept { cudaStreamDestroy(s); }
};
struct CublasDeleter {
  void operator()(cublasHandle_t h) const noexcept { cublasDestroy(h); }
};
struct EventDeleter {
  void operator()(cudaEvent_t e) const noexcept { cudaEventDestroy(e); }
};
struct GraphExecDeleter {
  void operator()(cudaGraphExec_t g) const noexcept { cudaGraphExecDestroy(g); }
};
struct GraphDeleter {
  void operator()(cudaGraph_t g) const noexcept { cudaGraphDestroy(g); }
};
using StreamPtr = std::unique_ptr<std::remove_pointer_t<cudaStream_t>, StreamDeleter>;
using CublasPtr = std::unique_ptr<std::remove_pointer_t<cublasHandle_t>, CublasDeleter>;
using EventPtr = std::unique_ptr<std::remove_pointer_t<cudaEvent_t>, EventDeleter>;
using GraphExecPtr = std::unique_ptr<std::remove_pointer_t<cudaGraphExec_t>, GraphExecDeleter>;
using GraphPtr = std::unique_ptr<std::remove_pointer_t<cudaGraph_t>, GraphDeleter>;

// Each cuBLAS handle's own workspace, set after cublasSetStream (which resets
// it), so that cuBLAS allocates nothing during graph capture: what PyTorch
// gives cuBLAS on Hopper, enough for every algorithm of our shapes.
constexpr std::size_t kCublasWorkspaceBytes = std::size_t{32} << 20;

}  // namespace gpuscale::cuda
