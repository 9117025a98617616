// Sum of squares in fp64: grid-stride partial sums, a block reduction in
// shared memory, one atomicAdd per block.
#include <cuda_runtime.h>

#include "device/cuda/cuda_errors.hpp"
#include "element.cuh"
#include "gemm_kernels.hpp"

namespace gpuscale::kernels {

namespace {
constexpr int kThreads = 256;

template <class T>
__global__ void sum_squares(const T* __restrict__ x, size_t count, double* acc) {
  __shared__ double part[kThreads];
  double s = 0.0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const double v = static_cast<double>(Element<T>::to_acc(x[i]));
    s += v * v;
  }
  part[threadIdx.x] = s;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(acc, part[0]);
}

template <class T>
int launch(const void* x, size_t count, double* acc, bool accumulate, cudaStream_t s) {
  if (!accumulate) {
    const cudaError_t e = cudaMemsetAsync(acc, 0, sizeof(double), s);
    if (e != cudaSuccess) return static_cast<int>(e);
  }
  const size_t blocks = count == 0 ? 1 : (count + kThreads - 1) / kThreads;
  const auto grid = static_cast<unsigned>(blocks < 1024 ? blocks : 1024);
  return cuda::checked_launch([&] { sum_squares<T><<<grid, kThreads, 0, s>>>(static_cast<const T*>(x), count, acc); });
}
}  // namespace

int launch_sum_squares(DType t, const void* x, std::size_t count, double* acc, bool accumulate, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  return with_element_type(t, [&](auto tag) { return launch<typename decltype(tag)::type>(x, count, acc, accumulate, s); });
}

}  // namespace gpuscale::kernels
