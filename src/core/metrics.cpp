#include "core/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/stats.hpp"

namespace gpuscale {

namespace {
void check_shape(const std::vector<double>& x, int ranks, int reps) {
  if (ranks <= 0 || reps <= 0 || x.size() != static_cast<std::size_t>(ranks) * static_cast<std::size_t>(reps)) {
    throw std::invalid_argument("samples do not have the shape [ranks][reps]");
  }
}
}  // namespace

std::vector<double> serial_turn_totals(const std::vector<double>& start, const std::vector<double>& end,
                                       const std::vector<std::int64_t>& turn, int ranks, int reps) {
  check_shape(start, ranks, reps);
  check_shape(end, ranks, reps);
  if (turn.size() != static_cast<std::size_t>(ranks)) throw std::invalid_argument("one turn per rank is needed");
  std::vector<double> out(reps, 0.0);
  const std::int64_t turns = *std::max_element(turn.begin(), turn.end()) + 1;
  for (std::int64_t t = 0; t < turns; ++t) {
    for (int i = 0; i < reps; ++i) {
      double lo = 0, hi = 0;
      bool any = false;
      for (int r = 0; r < ranks; ++r) {
        if (turn[r] != t) continue;
        const std::size_t k = static_cast<std::size_t>(r) * reps + i;
        lo = any ? std::min(lo, start[k]) : start[k];
        hi = any ? std::max(hi, end[k]) : end[k];
        any = true;
      }
      if (any) out[i] += hi - lo;
    }
  }
  return out;
}

std::vector<double> mean_op_times(const std::vector<double>& device_time, int ranks, int reps, int iters) {
  check_shape(device_time, ranks, reps);
  if (iters < 1) throw std::invalid_argument("iters must be at least 1");
  std::vector<double> out(reps, 0.0);
  for (int r = 0; r < ranks; ++r) {
    for (int i = 0; i < reps; ++i) out[i] += device_time[static_cast<std::size_t>(r) * reps + i];
  }
  for (double& x : out) x /= static_cast<double>(ranks) * iters;
  return out;
}

std::pair<std::vector<double>, std::vector<double>> op_time_extremes(const std::vector<double>& device_time, int ranks,
                                                                     int reps, int iters) {
  check_shape(device_time, ranks, reps);
  if (iters < 1) throw std::invalid_argument("iters must be at least 1");
  std::vector<double> least(reps, INFINITY), most(reps, -INFINITY);
  for (int r = 0; r < ranks; ++r) {
    for (int i = 0; i < reps; ++i) {
      const double t = device_time[static_cast<std::size_t>(r) * reps + i] / iters;
      least[i] = std::min(least[i], t);
      most[i] = std::max(most[i], t);
    }
  }
  return {least, most};
}

std::vector<double> makespans(const std::vector<double>& start, const std::vector<double>& end, int ranks, int reps) {
  check_shape(start, ranks, reps);
  check_shape(end, ranks, reps);
  std::vector<double> out(reps);
  for (int i = 0; i < reps; ++i) {
    double lo = start[i], hi = end[i];
    for (int r = 1; r < ranks; ++r) {
      lo = std::min(lo, start[static_cast<std::size_t>(r) * reps + i]);
      hi = std::max(hi, end[static_cast<std::size_t>(r) * reps + i]);
    }
    out[i] = hi - lo;
  }
  return out;
}

std::vector<double> rank_medians(const std::vector<double>& x, int ranks, int reps) {
  check_shape(x, ranks, reps);
  std::vector<double> out;
  for (int r = 0; r < ranks; ++r) {
    out.push_back(quantile(x.data() + static_cast<std::size_t>(r) * static_cast<std::size_t>(reps),
                           static_cast<std::size_t>(reps), 0.5));
  }
  return out;
}

std::vector<double> durations(const std::vector<double>& start, const std::vector<double>& end) {
  if (start.size() != end.size()) throw std::invalid_argument("start and end differ in length");
  std::vector<double> out(start.size());
  for (std::size_t i = 0; i < start.size(); ++i) out[i] = end[i] - start[i];
  return out;
}

double gemm_flops(double m, double n, double k) { return 2.0 * m * n * k; }

double speedup(double serial_s, double parallel_s) { return serial_s / parallel_s; }

double efficiency(double s, double workers) { return s / workers; }

}  // namespace gpuscale
