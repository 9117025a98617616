// Element types of our kernels: how each converts to its accumulator type and back.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>
#include <utility>

#include "device/dtype.hpp"

namespace gpuscale::kernels {

template <class T>
struct Element;

template <>
struct Element<double> {
  using Acc = double;
  __device__ static double to_acc(double x) { return x; }
  __device__ static double from_acc(double x) { return x; }
};

template <>
struct Element<float> {
  using Acc = float;
  __device__ static float to_acc(float x) { return x; }
  __device__ static float from_acc(float x) { return x; }
};

template <>
struct Element<__half> {
  using Acc = float;
  __device__ static float to_acc(__half x) { return __half2float(x); }
  __device__ static __half from_acc(float x) { return __float2half_rn(x); }
};

template <>
struct Element<__nv_bfloat16> {
  using Acc = float;
  __device__ static float to_acc(__nv_bfloat16 x) { return __bfloat162float(x); }
  __device__ static __nv_bfloat16 from_acc(float x) { return __float2bfloat16_rn(x); }
};

// Whether a pointer allows 16-byte vector loads and stores.
inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// Whether every row of row-major A (k elements of T wide), B and C (n wide) starts on a 16-byte boundary, so that
// a gemm can load and store them 16 bytes at a time.
template <class T>
bool rows_of_16_bytes(int n, int k, const void* a, const void* b, const void* c) {
  constexpr int kV = 16 / sizeof(T);
  return k % kV == 0 && n % kV == 0 && aligned16(a) && aligned16(b) && aligned16(c);
}

template <class F, std::size_t... I>
int with_index(int index, F& f, std::index_sequence<I...>) {
  int r = static_cast<int>(cudaErrorInvalidValue);
  ((index == static_cast<int>(I) ? (r = f(std::integral_constant<std::size_t, I>{})) : 0), ...);
  return r;
}

// f(std::integral_constant<std::size_t, I>{}) for the I in [0, N) that equals `index` (a run-time choice among N
// compile-time instantiations, such as a kernel's tiles); cudaErrorInvalidValue where none does.
template <std::size_t N, class F>
int with_index(int index, F&& f) {
  return with_index(index, f, std::make_index_sequence<N>());
}

template <class T>
struct Tag {
  using type = T;
};

// Calls f(Tag<T>{}) with the element type T of t (tf32 is stored as float);
// an unknown type is cudaErrorInvalidValue.
template <class F>
int with_element_type(DType t, F&& f) {
  switch (t) {
    case DType::fp64: return f(Tag<double>{});
    case DType::fp32:
    case DType::tf32: return f(Tag<float>{});
    case DType::fp16: return f(Tag<__half>{});
    case DType::bf16: return f(Tag<__nv_bfloat16>{});
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

}  // namespace gpuscale::kernels
