// Order-statistic intervals of medians and of ratios of medians.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "core/intervals.hpp"
#include "core/stats.hpp"

using namespace gpuscale;

TEST_CASE("a median's interval is the order statistics the binomial allows", "[intervals]") {
  std::vector<double> s(10);
  std::iota(s.begin(), s.end(), 1.0);
  std::shuffle(s.begin(), s.end(), std::mt19937(1));
  // n = 10: P(B <= 1) = 11/1024 <= 0.0125 < P(B <= 2) = 56/1024, so x(2)..x(9).
  const auto i10 = median_interval(s);
  REQUIRE(i10);
  CHECK(i10->lo == 2.0);
  CHECK(i10->hi == 9.0);

  // n = 7 is the least that reaches 97.5% with [min, max]; 6 cannot.
  CHECK(kMinIntervalSamples == 7);
  const auto i7 = median_interval({3, 1, 7, 5, 2, 6, 4});
  REQUIRE(i7);
  CHECK(i7->lo == 1.0);
  CHECK(i7->hi == 7.0);
  CHECK_FALSE(median_interval({1, 2, 3, 4, 5, 6}));
  CHECK_FALSE(median_interval({}));

  // Many samples: close to the normal approximation n/2 -+ 2.2414 sqrt(n)/2.
  std::vector<double> big(10000);
  std::iota(big.begin(), big.end(), 1.0);
  std::shuffle(big.begin(), big.end(), std::mt19937(2));
  const auto ib = median_interval(big);
  REQUIRE(ib);
  CHECK(std::fabs(ib->lo - (5000 - 2.2414 * 50)) <= 2.0);
  CHECK(ib->lo + ib->hi == 10001.0);  // symmetric order statistics
}

TEST_CASE("a median and its interval in one selection are median()'s and median_interval()'s", "[intervals]") {
  std::mt19937 gen(3);
  std::lognormal_distribution<double> skewed(0.0, 1.0);
  for (const std::size_t n : {1, 2, 6, 7, 8, 1000, 4095, 4096, 100001}) {
    std::vector<double> s(n);
    for (auto& v : s) v = std::round(skewed(gen) * 100.0) / 100.0;  // ties too
    const MedianInterval got = median_and_interval(s);
    CHECK(got.median == median(s));
    const auto want = median_interval(s);
    REQUIRE(got.interval.has_value() == want.has_value());
    if (want) {
      CHECK(got.interval->lo == want->lo);
      CHECK(got.interval->hi == want->hi);
    }
  }
  CHECK_THROWS_AS(median_and_interval({}), std::invalid_argument);
  CHECK(std::isnan(median_and_interval({1, 2, NAN, 4, 5, 6, 7, 8}).median));
}

TEST_CASE("a median interval's rank is the full binomial sum's, for up to millions of samples", "[intervals]") {
  // The sum from B = 0, in long double: what median_interval_rank gives by starting 7 deviations below n/2.
  const auto from_zero = [](std::size_t n) {
    const long double tail = (1.0L - kMedianConfidence) / 2.0L, dn = static_cast<long double>(n);
    long double log_p = -dn * std::log(2.0L), cdf = 0.0L;
    std::size_t j = 0;
    for (std::size_t k = 0; k < n / 2; ++k) {
      cdf += std::exp(log_p);
      if (cdf > tail) break;
      j = k + 1;
      log_p += std::log((dn - static_cast<long double>(k)) / static_cast<long double>(k + 1));
    }
    return j;
  };
  for (std::size_t n : {1u, 6u, 7u, 10u, 48u, 49u, 50u, 197u, 1000u, 4097u, 100000u, 1000001u}) {
    INFO("n = " << n);
    CHECK(median_interval_rank(n) == from_zero(n));
  }
  // 10^7 samples: the normal approximation's n/2 - 2.2414 sqrt(n)/2, within a rank or two.
  CHECK(std::fabs(static_cast<double>(median_interval_rank(10000000)) - (5e6 - 2.2414 * std::sqrt(1e7) / 2)) <= 3.0);
}

TEST_CASE("median intervals hold the true median as often as they say, for skewed samples", "[intervals]") {
  std::mt19937 rng(7);
  std::lognormal_distribution<double> time(0.0, 1.0);  // median exp(0) = 1
  int held = 0, ratio_held = 0;
  const int trials = 2000;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> a(10), b(10);
    for (auto& x : a) x = time(rng);
    for (auto& x : b) x = time(rng);
    const auto ia = median_interval(a);
    held += ia->contains(1.0);
    ratio_held += ratio_interval(ia, median_interval(b))->contains(1.0);
  }
  // n = 10: exactly 1 - 2 * 11/1024 = 97.85% for any continuous distribution;
  // 4 standard deviations of 2000 trials below it still fail a wrong interval.
  CHECK(held >= 0.965 * trials);
  CHECK(ratio_held >= 0.95 * trials);
}

TEST_CASE("a ratio's interval divides the bounds crosswise and gives a verdict", "[intervals]") {
  const auto r = ratio_interval(Interval{2.0, 3.0}, Interval{1.0, 1.5});
  REQUIRE(r);
  CHECK(r->lo == Approx(2.0 / 1.5));
  CHECK(r->hi == 3.0);
  CHECK(time_ratio_verdict(r) == "slower");
  CHECK(time_ratio_verdict(ratio_interval(Interval{1.0, 1.5}, Interval{2.0, 3.0})) == "faster");
  CHECK(time_ratio_verdict(ratio_interval(Interval{1.0, 2.0}, Interval{1.5, 1.8})) == "within noise");
  CHECK(time_ratio_verdict(ratio_interval(std::nullopt, Interval{1.0, 2.0})) == "too few samples");
  CHECK_FALSE(ratio_interval(Interval{1.0, 2.0}, Interval{0.0, 1.0}));  // a zero time: no ratio
}
