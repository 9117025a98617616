// Element types of our kernels: how each converts to its accumulator type and back.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

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

}  // namespace gpuscale::kernels
