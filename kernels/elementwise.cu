// r += a * b, memory bound (STREAM triad's traffic plus the read of r): a
// grid-stride loop over 16-byte vectors (float4, double2) where all three
// pointers are 16-byte aligned, so each thread moves full 16-byte words; the
// count's remainder, or every element of unaligned pointers, one at a time.
#include <cuda_runtime.h>

#include "device/cuda/cuda_errors.hpp"
#include "element.cuh"
#include "elementwise.hpp"

namespace gpuscale::kernels {

namespace {
constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 2048 / kThreads;  // one full wave at 2048 resident threads per SM (sm_80, sm_90)

__device__ inline void multiply_add(float4& r, const float4& a, const float4& b) {
  r.x += a.x * b.x;
  r.y += a.y * b.y;
  r.z += a.z * b.z;
  r.w += a.w * b.w;
}

__device__ inline void multiply_add(double2& r, const double2& a, const double2& b) {
  r.x += a.x * b.x;
  r.y += a.y * b.y;
}

template <class T>
struct Vector;
template <>
struct Vector<float> {
  using type = float4;
};
template <>
struct Vector<double> {
  using type = double2;
};

// `vectors` 16-byte words first, then the elements from vectors * width to count.
template <class T>
__global__ void multiply_add_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ r,
                                    size_t vectors, size_t count) {
  using V = typename Vector<T>::type;
  constexpr size_t width = sizeof(V) / sizeof(T);
  const size_t first = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const V* av = reinterpret_cast<const V*>(a);
  const V* bv = reinterpret_cast<const V*>(b);
  V* rv = reinterpret_cast<V*>(r);
  for (size_t i = first; i < vectors; i += stride) {
    V x = rv[i];
    multiply_add(x, av[i], bv[i]);
    rv[i] = x;
  }
  for (size_t i = vectors * width + first; i < count; i += stride) r[i] += a[i] * b[i];
}

template <class T>
int launch(const void* a, const void* b, void* r, size_t count, cudaStream_t s) {
  if (count == 0) return static_cast<int>(cudaSuccess);
  constexpr size_t width = sizeof(typename Vector<T>::type) / sizeof(T);
  const size_t vectors = aligned16(a) && aligned16(b) && aligned16(r) ? count / width : 0;
  const size_t items = vectors + (count - vectors * width);  // what one grid-stride pass has to cover
  int device = 0, sms = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (e != cudaSuccess) return static_cast<int>(e);
  const size_t wave = static_cast<size_t>(sms > 0 ? sms : 1) * kBlocksPerSm;
  const size_t needed = (items + kThreads - 1) / kThreads;
  const auto blocks = static_cast<unsigned>(needed < wave ? needed : wave);
  return cuda::checked_launch([&] {
    multiply_add_kernel<T><<<blocks, kThreads, 0, s>>>(static_cast<const T*>(a), static_cast<const T*>(b),
                                                       static_cast<T*>(r), vectors, count);
  });
}
}  // namespace

int launch_multiply_add(DType t, const void* a, const void* b, void* r, std::size_t count, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  switch (t) {
    case DType::fp64: return launch<double>(a, b, r, count, s);
    case DType::fp32: return launch<float>(a, b, r, count, s);
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}

}  // namespace gpuscale::kernels
