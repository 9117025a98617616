#include "core/intervals.hpp"

#include <algorithm>
#include <cmath>

namespace gpuscale {

std::optional<Interval> median_interval(std::vector<double> samples, double confidence) {
  const std::size_t n = samples.size();
  if (n == 0) return std::nullopt;
  // The largest j with P(B <= j-1) <= (1 - confidence) / 2, summing the
  // binomial probabilities up from B = 0 in logs (n may be millions).
  const double tail = (1.0 - confidence) / 2.0;
  const double dn = static_cast<double>(n);
  double log_p = -dn * std::log(2.0);  // P(B = 0)
  double cdf = 0.0;
  std::size_t j = 0;  // P(B <= j-1) <= tail so far
  for (std::size_t k = 0; k < n / 2; ++k) {
    cdf += std::exp(log_p);
    if (cdf > tail) break;
    j = k + 1;
    log_p += std::log((dn - static_cast<double>(k)) / static_cast<double>(k + 1));
  }
  if (j == 0) return std::nullopt;
  auto at = [&](std::size_t i) {
    std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(i), samples.end());
    return samples[i];
  };
  const double hi = at(n - j);  // x(n+1-j), 0-based n-j; nth_element leaves smaller ones before it
  samples.resize(n - j);        // x(j) is among them
  return Interval{at(j - 1), hi};
}

std::optional<Interval> ratio_interval(const std::optional<Interval>& a, const std::optional<Interval>& b) {
  if (!a || !b || !(b->lo > 0) || !(a->lo >= 0)) return std::nullopt;
  return Interval{a->lo / b->hi, a->hi / b->lo};
}

std::string time_ratio_verdict(const std::optional<Interval>& ratio) {
  if (!ratio) return "too few samples";
  if (ratio->lo > 1.0) return "slower";
  if (ratio->hi < 1.0) return "faster";
  return "within noise";
}

}  // namespace gpuscale
