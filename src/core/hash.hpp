// SplitMix64: the seeded, index-addressable pseudo-random numbers of the
// workloads' inputs (any rank can regenerate any element without storing it).
#pragma once

#include <cstdint>

namespace gpuscale {

// The SplitMix64 output function: a well-mixed 64-bit value of x.
inline std::uint64_t mix64(std::uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

constexpr std::uint64_t kGoldenGamma = 0x9E3779B97F4A7C15ULL;

// One SplitMix64 step from `state` (the generator's next output is splitmix64(state), then state += kGoldenGamma).
inline std::uint64_t splitmix64(std::uint64_t state) { return mix64(state + kGoldenGamma); }

}  // namespace gpuscale
