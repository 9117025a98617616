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
  // Int and Float: what the code can hold and compute with (docs/config.md lists each).
  double max = std::numeric_limits<double>::infinity();
  bool min_exclusive = false;                             // values must be greater than min
};

// A count of bytes: an integer key named `bytes` or ending in `_bytes` (copy's and collective's bytes, dp_step's
// bucket_bytes). Besides an integer it takes a size as people write it, "64K", "16M", "1G" (core/text.hpp's
// parse_size), in a config, a list, a range and --set alike.
inline bool is_size(const ParamSpec& s) {
  const std::string suffix = "_bytes";
  const std::string& k = s.key;
  const bool ends_so = k.size() > suffix.size() && k.compare(k.size() - suffix.size(), suffix.size(), suffix) == 0;
  return s.type == ParamType::Int && (k == "bytes" || ends_so);
}

// Maxima shared by several keys (docs/config.md, "Largest values").
// A count the code keeps in an int (reps, warmup, iters, ops, ...).
constexpr double kMaxCount = 2147483647.0;  // INT_MAX
// Any duration in seconds (timeout, warmup_s, budget_s, --time-budget): 30
// days, far past any run and far from the clocks' limits (nanoseconds in 64 bits).
constexpr double kMaxDurationS = 30 * 24 * 3600.0;
// Bytes of one buffer (copy and collective bytes, bucket_bytes): 1 TiB, past
// any device's memory and far from overflowing the byte counts made from it.
constexpr double kMaxBufferBytes = 1099511627776.0;  // 2^40

// The parameters every experiment has besides its workload's own.
// What the report rates a workload's samples by: GFLOP/s, GB/s, or as a
// transfer (algbw and busbw); decides which [experiment.expect] limits apply.
enum class RateKind { flops, bytes, transfer };

struct WorkloadSchema {
  std::string name;
  std::string description;
  std::vector<ParamSpec> params;
  RateKind rate = RateKind::flops;
  // Its rows compare our kernels with the vendor library's ("of vendor"): limit min_of_vendor applies.
  bool of_vendor = false;
};

}  // namespace gpuscale
