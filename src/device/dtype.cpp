#include "device/dtype.hpp"

#include <stdexcept>

namespace gpuscale {

DType parse_dtype(const std::string& name) {
  if (name == "fp64") return DType::fp64;
  if (name == "fp32") return DType::fp32;
  throw std::invalid_argument("unknown dtype '" + name + "'");
}

const char* dtype_name(DType t) { return t == DType::fp64 ? "fp64" : "fp32"; }

std::size_t dtype_size(DType t) { return t == DType::fp64 ? 8 : 4; }

double dtype_epsilon(DType t) { return t == DType::fp64 ? 0x1p-53 : 0x1p-24; }

const std::vector<std::string>& cpu_dtype_names() {
  static const std::vector<std::string> v{"fp64", "fp32"};
  return v;
}

}  // namespace gpuscale
