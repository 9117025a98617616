// SplitMix64: the seeded, index-addressable pseudo-random numbers of the
// workloads' inputs (any rank can regenerate any element without storing it);
// and the hashes of a result file's digests (docs/results-format.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

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

// FNV-1a, 64 bits, of n bytes: a short string's hash (a dataset's path, a string value).
inline std::uint64_t fnv1a64(const char* p, std::size_t n) {
  std::uint64_t h = 0xCBF29CE484222325ULL;
  for (std::size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(p[i]);
    h *= 0x100000001B3ULL;
  }
  return h;
}

// The sum (mod 2^64) of mix64(w_i ^ (seed + (first + i + 1) * kGoldenGamma)) over the n 64-bit words at p (each
// read in the machine's order): a value's term depends on where it is, and terms add up in any order, so a
// sequence can be summed a piece at a time (a chunk just read, while it is in the cache). Independent steps:
// the multiplies of successive words overlap.
inline std::uint64_t keyed_sum(const void* p, std::size_t n, std::size_t first, std::uint64_t seed) {
  const auto* b = static_cast<const unsigned char*>(p);
  std::uint64_t sum = 0, key = seed + (first + 1) * kGoldenGamma;
  for (std::size_t i = 0; i < n; ++i, key += kGoldenGamma) {
    std::uint64_t w;
    std::memcpy(&w, b + 8 * i, sizeof w);
    sum += mix64(w ^ key);
  }
  return sum;
}

}  // namespace gpuscale
