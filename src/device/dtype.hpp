// Element types of workload buffers, and their host encoding: values are
// generated and checked as doubles on the host and stored on the device in
// the dtype's own bits (fp16 and bf16 as their 16-bit patterns).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace gpuscale {

// tf32 is stored as fp32; only the multiplication rounds its inputs to tf32.
enum class DType { fp64, fp32, tf32, fp16, bf16 };

DType parse_dtype(const std::string& name);  // throws std::invalid_argument
const char* dtype_name(DType t);
std::size_t dtype_size(DType t);
// Unit roundoff of the stored format: 2^-53, 2^-24 (fp32, tf32), 2^-11, 2^-8.
double dtype_unit_roundoff(DType t);
const std::vector<std::string>& dtype_names();

// n values to/from the dtype's storage; out/in hold n * dtype_size(t) bytes.
void encode(const double* in, std::size_t n, DType t, void* out);
void decode(const void* in, std::size_t n, DType t, double* out);

// IEEE binary16 and bfloat16 from/to float, rounding to nearest even.
unsigned short float_to_half_bits(float f);
float half_bits_to_float(unsigned short h);
unsigned short float_to_bf16_bits(float f);
float bf16_bits_to_float(unsigned short b);

}  // namespace gpuscale
