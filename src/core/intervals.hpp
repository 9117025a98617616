// How sure a median is, and a ratio of two medians: distribution-free
// confidence intervals from order statistics. Timings are skewed and
// heavy-tailed, so nothing is assumed about their distribution; and the
// intervals of two cases combine into one for their ratio without keeping
// their samples (the report reads a file one case at a time).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace gpuscale {

struct Interval {
  double lo = 0.0, hi = 0.0;
  bool contains(double x) const { return lo <= x && x <= hi; }
};

// Each median's interval holds the true median with at least this
// probability, so an interval of the ratio of two medians holds the true
// ratio with at least 0.95 (Bonferroni).
constexpr double kMedianConfidence = 0.975;

// The fewest samples whose smallest and largest reach kMedianConfidence for the median (1 - 2^(1-n) >= 0.975).
constexpr std::size_t kMinIntervalSamples = 7;

// The narrowest order-statistic interval [x(j), x(n+1-j)] (1-based) that
// holds the median of the samples' distribution with probability at least
// `confidence` (B ~ Binomial(n, 1/2): 1 - 2 P(B <= j-1) >= confidence),
// assuming only independent samples. nullopt when even [min, max] falls short
// (fewer than kMinIntervalSamples samples at the default).
std::optional<Interval> median_interval(const std::vector<double>& samples, double confidence = kMedianConfidence);

// The median (as median() in stats.hpp) and that interval of the same samples, in one selection. Throws
// std::invalid_argument on an empty sample; all NaN when a sample is NaN.
struct MedianInterval {
  double median = 0.0;
  std::optional<Interval> interval;
};
MedianInterval median_and_interval(const std::vector<double>& samples, double confidence = kMedianConfidence);

// That interval's j for n samples (0 when none reaches `confidence`).
std::size_t median_interval_rank(std::size_t n, double confidence = kMedianConfidence);

// The ratio a / b of two positive quantities in intervals a and b: [a.lo / b.hi, a.hi / b.lo].
std::optional<Interval> ratio_interval(const std::optional<Interval>& a, const std::optional<Interval>& b);

// How a ratio new / old of times compares with 1: "slower" when its interval
// lies above 1, "faster" below 1, "within noise" when it holds 1, and "too
// few samples" without an interval.
std::string time_ratio_verdict(const std::optional<Interval>& ratio);

}  // namespace gpuscale
