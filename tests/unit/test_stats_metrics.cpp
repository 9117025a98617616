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

TEST_CASE("serial sample time is the sum over ranks; parallel is the makespan", "[metrics]") {
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
