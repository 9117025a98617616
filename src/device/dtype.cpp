#include "device/dtype.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace gpuscale {

DType parse_dtype(const std::string& name) {
  if (name == "fp64") return DType::fp64;
  if (name == "fp32") return DType::fp32;
  if (name == "tf32") return DType::tf32;
  if (name == "fp16") return DType::fp16;
  if (name == "bf16") return DType::bf16;
  throw std::invalid_argument("unknown dtype '" + name + "'");
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::fp64: return "fp64";
    case DType::fp32: return "fp32";
    case DType::tf32: return "tf32";
    case DType::fp16: return "fp16";
    case DType::bf16: return "bf16";
  }
  return "?";
}

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::fp64: return 8;
    case DType::fp32:
    case DType::tf32: return 4;
    case DType::fp16:
    case DType::bf16: return 2;
  }
  return 0;
}

double dtype_unit_roundoff(DType t) {
  switch (t) {
    case DType::fp64: return 0x1p-53;
    case DType::fp32:
    case DType::tf32: return 0x1p-24;
    case DType::fp16: return 0x1p-11;
    case DType::bf16: return 0x1p-8;
  }
  return 0;
}

const std::vector<std::string>& dtype_names() {
  static const std::vector<std::string> v{"fp64", "fp32", "tf32", "fp16", "bf16"};
  return v;
}

namespace {
std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float float_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

unsigned short float_to_half_bits(float f) {
  const std::uint32_t x = bits_of(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t mag = x & 0x7fffffffu;
  if (mag >= 0x7f800000u) return static_cast<unsigned short>(sign | 0x7c00u | (mag > 0x7f800000u ? 0x200u : 0u));
  if (mag >= 0x477ff000u) return static_cast<unsigned short>(sign | 0x7c00u);  // rounds past 65504: inf
  if (mag < 0x38800000u) {  // subnormal or zero in binary16
    const int shift = 113 - static_cast<int>(mag >> 23);
    if (shift > 18) return static_cast<unsigned short>(sign);  // below 2^-32: rounds to zero
    const std::uint32_t m = (mag & 0x7fffffu) | 0x800000u;
    std::uint32_t h = m >> (shift + 13);
    const std::uint32_t rem = m & ((1u << (shift + 13)) - 1u);
    const std::uint32_t half = 1u << (shift + 12);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return static_cast<unsigned short>(sign | h);
  }
  std::uint32_t h = ((mag - 0x38000000u) >> 13);
  const std::uint32_t rem = mag & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<unsigned short>(sign | h);
}

float half_bits_to_float(unsigned short h) {
  const std::uint32_t sign = (static_cast<std::uint32_t>(h) & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t man = h & 0x3ffu;
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(man), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return float_of(sign | 0x7f800000u | (man << 13));
  return float_of(sign | ((exp + 112) << 23) | (man << 13));
}

unsigned short float_to_bf16_bits(float f) {
  std::uint32_t x = bits_of(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<unsigned short>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<unsigned short>(x >> 16);
}

float bf16_bits_to_float(unsigned short b) { return float_of(static_cast<std::uint32_t>(b) << 16); }

void encode(const double* in, std::size_t n, DType t, void* out) {
  switch (t) {
    case DType::fp64: std::memcpy(out, in, n * 8); return;
    case DType::fp32:
    case DType::tf32:
      for (std::size_t i = 0; i < n; ++i) static_cast<float*>(out)[i] = static_cast<float>(in[i]);
      return;
    case DType::fp16:
      for (std::size_t i = 0; i < n; ++i) {
        static_cast<unsigned short*>(out)[i] = float_to_half_bits(static_cast<float>(in[i]));
      }
      return;
    case DType::bf16:
      for (std::size_t i = 0; i < n; ++i) {
        static_cast<unsigned short*>(out)[i] = float_to_bf16_bits(static_cast<float>(in[i]));
      }
      return;
  }
}

void decode(const void* in, std::size_t n, DType t, double* out) {
  switch (t) {
    case DType::fp64: std::memcpy(out, in, n * 8); return;
    case DType::fp32:
    case DType::tf32:
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<const float*>(in)[i];
      return;
    case DType::fp16:
      for (std::size_t i = 0; i < n; ++i) out[i] = half_bits_to_float(static_cast<const unsigned short*>(in)[i]);
      return;
    case DType::bf16:
      for (std::size_t i = 0; i < n; ++i) out[i] = bf16_bits_to_float(static_cast<const unsigned short*>(in)[i]);
      return;
  }
}

}  // namespace gpuscale
