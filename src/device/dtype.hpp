// Element types of workload buffers.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace gpuscale {

enum class DType { fp64, fp32 };

DType parse_dtype(const std::string& name);  // throws std::invalid_argument
const char* dtype_name(DType t);
std::size_t dtype_size(DType t);
double dtype_epsilon(DType t);  // unit roundoff: 2^-53, 2^-24
const std::vector<std::string>& cpu_dtype_names();

}  // namespace gpuscale
