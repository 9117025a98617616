// Statistics and the report's formulas, against hand-computed values.
#include <catch2/catch.hpp>

#include "core/metrics.hpp"
#include "core/stats.hpp"
#include "core/text.hpp"

using namespace gpuscale;

TEST_CASE("quantiles interpolate between closest ranks like numpy", "[stats]") {
  const std::vector<double> s{5, 1, 4, 2, 3};
  CHECK(median(s) == 3.0);
  CHECK(median({4, 1, 3, 2}) == 2.5);
  CHECK(quantile(s, 0.95) == Approx(4.8));
  CHECK(quantile(s, 0.0) == 1.0);
  CHECK(quantile(s, 1.0) == 5.0);
  CHECK(minimum(s) == 1.0);
  CHECK(maximum(s) == 5.0);
  CHECK_THROWS_AS(median({}), std::invalid_argument);
}

TEST_CASE("serial sample time is the sum over ranks, parallel is the makespan", "[metrics]") {
  // 2 ranks x 3 reps, row-major [rank][rep].
  const std::vector<double> d{1, 2, 3, 10, 20, 30};
  const std::vector<double> zero(6, 0.0);
  CHECK(serial_turn_totals(zero, d, {0, 1}, 2, 3) == std::vector<double>{11, 22, 33});
  const std::vector<double> start{0.0, 1.0, 2.0, 0.1, 1.2, 1.9};
  const std::vector<double> end{0.5, 1.4, 2.6, 0.7, 1.3, 2.5};
  const auto m = makespans(start, end, 2, 3);
  CHECK(m[0] == Approx(0.7));
  CHECK(m[1] == Approx(0.4));
  CHECK(m[2] == Approx(0.7));
  CHECK(rank_medians(d, 2, 3) == std::vector<double>{2, 20});
  CHECK_THROWS_AS(serial_turn_totals(zero, d, {0, 1, 2, 3}, 4, 3), std::invalid_argument);
}

TEST_CASE("gemm flops and speedup and efficiency", "[metrics]") {
  CHECK(gemm_flops(100, 100, 100) == 2e6);
  CHECK(gemm_flops(2, 3, 4) == 48);
  const double s = speedup(2.0, 1.25);
  CHECK(s == Approx(1.6));
  CHECK(efficiency(s, 2) == Approx(0.8));
}

TEST_CASE("suggestions find plausible typos only", "[text]") {
  const std::vector<std::string> keys{"size", "dtype", "ops", "warmup"};
  CHECK(nearest("szie", keys) == "size");
  CHECK(nearest("DTYPE", keys) == "dtype");
  CHECK(nearest("warmpu", keys) == "warmup");
  CHECK(nearest("completely-different", keys).empty());
  CHECK(did_you_mean("opss", keys) == " (did you mean 'ops'?)");
  CHECK(join({"a", "b", "c"}, ", ") == "a, b, c");
}

TEST_CASE("quantiles of large samples equal a full sort's, ties, infinities and NaN included", "[stats]") {
  const auto by_sort = [](std::vector<double> s, double q) {
    std::sort(s.begin(), s.end());
    const double pos = q * static_cast<double>(s.size() - 1);
    const auto lo = static_cast<std::size_t>(pos);
    const auto hi = std::min(lo + 1, s.size() - 1);
    return s[lo] + (pos - static_cast<double>(lo)) * (s[hi] - s[lo]);
  };
  std::uint64_t x = 1;
  const auto next = [&x] { return (x = x * 6364136223846793005ULL + 1442695040888963407ULL) >> 11; };
  for (const std::size_t n : {4095, 4096, 10007, 200000}) {
    std::vector<std::vector<double>> cases(5, std::vector<double>(n));
    for (std::size_t i = 0; i < n; ++i) {
      cases[0][i] = static_cast<double>(next() % 1000000) * 1e-6;          // spread out
      cases[1][i] = static_cast<double>(next() % 7);                       // few distinct values
      cases[2][i] = 0.25;                                                   // all the same
      cases[3][i] = static_cast<double>(i % 10) + 1e-3 * static_cast<double>(i / 10);  // periodic
      cases[4][i] = i % 97 == 0 ? INFINITY : static_cast<double>(next() % 1000);      // with infinities
    }
    for (const auto& s : cases) {
      for (const double q : {0.0, 0.05, 0.5, 0.95, 0.999, 1.0}) {
        const double got = quantile(s, q), want = by_sort(s, q);  // inf - inf interpolates to NaN in both
        CHECK((got == want || (std::isnan(got) && std::isnan(want))));
      }
    }
    std::vector<double> with_nan = cases[0];
    with_nan[n / 3] = NAN;
    CHECK(std::isnan(median(with_nan)));
  }
}

TEST_CASE("several order statistics in one selection equal a full sort's, repeated ranks and ties included",
          "[stats]") {
  std::uint64_t x = 7;
  const auto next = [&x] { return (x = x * 6364136223846793005ULL + 1442695040888963407ULL) >> 11; };
  for (const std::size_t n : {1, 2, 9, 4095, 4096, 10007, 200000}) {
    std::vector<std::vector<double>> cases(3, std::vector<double>(n));
    for (std::size_t i = 0; i < n; ++i) {
      cases[0][i] = static_cast<double>(next() % 1000000) * 1e-6;  // spread out
      cases[1][i] = static_cast<double>(next() % 5);               // few distinct values
      cases[2][i] = i % 101 == 0 ? INFINITY : static_cast<double>(next() % 1000);
    }
    for (const auto& s : cases) {
      std::vector<double> sorted = s;
      std::sort(sorted.begin(), sorted.end());
      const std::size_t mid = (n - 1) / 2;
      // Close together (a median and its interval), repeated, and far apart (the sample's bracket spans them).
      for (const std::vector<std::size_t>& ks :
           {std::vector<std::size_t>{mid / 2, mid, mid, std::min(mid + 1, n - 1), n - 1 - mid / 2},
            std::vector<std::size_t>{0, n - 1}, std::vector<std::size_t>{n / 20, n - 1 - n / 20}}) {
        const std::vector<double> got = order_statistics(s, ks);
        REQUIRE(got.size() == ks.size());
        for (std::size_t i = 0; i < ks.size(); ++i) CHECK(got[i] == sorted[ks[i]]);
      }
    }
  }
  CHECK(order_statistics({3.0, 1.0}, {}).empty());
  CHECK_THROWS_AS(order_statistics({3.0, 1.0}, {1, 0}), std::invalid_argument);  // not ascending
  CHECK_THROWS_AS(order_statistics({3.0, 1.0}, {0, 2}), std::invalid_argument);  // past the end
  const std::vector<double> nan = order_statistics({3.0, NAN, 1.0}, {0, 2});
  CHECK((std::isnan(nan[0]) && std::isnan(nan[1])));
}
