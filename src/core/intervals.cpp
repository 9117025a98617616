#include "core/intervals.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/stats.hpp"

namespace gpuscale {

std::size_t median_interval_rank(std::size_t n, double confidence) {
  // The largest j with P(B <= j-1) <= (1 - confidence) / 2, summing the binomial probabilities up in logs. The
  // sum starts 7 standard deviations below n/2, where the terms left out add to under 1e-11 (n may be millions:
  // from B = 0 it would take n/2 terms, each an underflowing exp); for n < 49 that is B = 0.
  const double tail = (1.0 - confidence) / 2.0;
  const double dn = static_cast<double>(n);
  const double from = std::floor(dn / 2.0 - 3.5 * std::sqrt(dn));
  const std::size_t k0 = from > 0 ? static_cast<std::size_t>(from) : 0;
  const double dk0 = static_cast<double>(k0);
  double log_p = std::lgamma(dn + 1.0) - std::lgamma(dk0 + 1.0) - std::lgamma(dn - dk0 + 1.0) - dn * std::log(2.0);
  double cdf = 0.0;
  std::size_t j = k0;  // P(B <= j-1) <= tail so far
  for (std::size_t k = k0; k < n / 2; ++k) {
    cdf += std::exp(log_p);
    if (cdf > tail) break;
    j = k + 1;
    log_p += std::log((dn - static_cast<double>(k)) / static_cast<double>(k + 1));
  }
  return j;
}

std::optional<Interval> median_interval(const std::vector<double>& samples, double confidence) {
  const std::size_t n = samples.size();
  const std::size_t j = n == 0 ? 0 : median_interval_rank(n, confidence);
  if (j == 0) return std::nullopt;
  // x(j) and x(n+1-j), 1-based: selected in place, without a copy of the samples.
  const std::vector<double> x = order_statistics(samples, {j - 1, n - j});
  return Interval{x[0], x[1]};
}

MedianInterval median_and_interval(const std::vector<double>& samples, double confidence) {
  const std::size_t n = samples.size();
  if (n == 0) throw std::invalid_argument("median of an empty sample");
  // As quantile(samples, 0.5): between the lo-th smallest and the next; the interval's ranks lie either side.
  const std::size_t lo = (n - 1) / 2, next = std::min(lo + 1, n - 1);
  const std::size_t j = median_interval_rank(n, confidence);
  std::vector<std::size_t> ks{lo, next};
  if (j > 0) ks = {j - 1, lo, next, n - j};
  const std::vector<double> x = order_statistics(samples, ks);
  const std::size_t at = j > 0 ? 1 : 0;  // where lo's value is in x
  MedianInterval m{x[at] + ((n - 1) % 2 ? 0.5 : 0.0) * (x[at + 1] - x[at]), std::nullopt};
  if (j > 0) m.interval = Interval{x.front(), x.back()};
  return m;
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
