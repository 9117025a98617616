// Element types of our kernels: how each converts to its accumulator type and back.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

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
