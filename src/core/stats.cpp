#include "core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gpuscale {

double quantile(std::vector<double> s, double q) {
  if (s.empty()) throw std::invalid_argument("quantile of an empty sample");
  if (q < 0.0 || q > 1.0) throw std::invalid_argument("quantile outside [0, 1]");
  std::sort(s.begin(), s.end());
  const double pos = q * static_cast<double>(s.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, s.size() - 1);
  return s[lo] + (pos - static_cast<double>(lo)) * (s[hi] - s[lo]);
}

double median(const std::vector<double>& s) { return quantile(s, 0.5); }

double mean(const std::vector<double>& s) {
  double sum = 0;
  for (double x : s) sum += x;
  return s.empty() ? 0.0 : sum / static_cast<double>(s.size());
}

double minimum(const std::vector<double>& s) {
  if (s.empty()) throw std::invalid_argument("minimum of an empty sample");
  return *std::min_element(s.begin(), s.end());
}

double maximum(const std::vector<double>& s) {
  if (s.empty()) throw std::invalid_argument("maximum of an empty sample");
  return *std::max_element(s.begin(), s.end());
}

}  // namespace gpuscale
