// What a parameter may hold: type, range, choices and default. Workloads declare
// theirs; the config loader checks every value against them.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/value.hpp"

namespace gpuscale {

enum class ParamType { Int, Float, String, Bool };

const char* type_name(ParamType t);  // "an integer", "a number", ...

struct ParamSpec {
  std::string key;
  ParamType type = ParamType::Int;
  std::string help;
  std::optional<Value> default_value;  // nullopt: optional, absent unless given
  double min = -std::numeric_limits<double>::infinity();  // Int and Float
  std::vector<std::string> choices;                       // String; empty = any
  bool min_exclusive = false;                             // values must be greater than min
};

// The parameters every experiment has besides its workload's own.
// What the report rates a workload's samples by: GFLOP/s, GB/s, or as a
// transfer (algbw and busbw); decides which [experiment.expect] limits apply.
enum class RateKind { flops, bytes, transfer };

struct WorkloadSchema {
  std::string name;
  std::string description;
  std::vector<ParamSpec> params;
  RateKind rate = RateKind::flops;
};

}  // namespace gpuscale
