// Order statistics of timing samples. Medians, not means: this is what the
// report quotes, since timings on shared machines have heavy upper tails.
#pragma once

#include <cstddef>
#include <vector>

namespace gpuscale {

// Linear interpolation between closest ranks (numpy's default). q in [0, 1].
// Throws std::invalid_argument on an empty sample; NaN when a sample is NaN
// (as numpy). Linear time, and no copy of the samples (a selection among
// those near the answer, not a sort).
double quantile(const std::vector<double>& samples, double q);
double quantile(const double* samples, std::size_t n, double q);  // of a run of n samples, the same way
double median(const std::vector<double>& samples);
// The k-th smallest (0-based; k < size), the same way; NaN when a sample is NaN.
double order_statistic(const std::vector<double>& samples, std::size_t k);
// The ks-th smallest of each k (ascending; close together, as a median and its interval, costs one selection),
// in that order; all NaN when a sample is NaN.
std::vector<double> order_statistics(const std::vector<double>& samples, const std::vector<std::size_t>& ks);
double mean(const std::vector<double>& samples);  // 0 for none
double minimum(const std::vector<double>& samples);
double maximum(const std::vector<double>& samples);

// How far positive values of one quantity in several runs scatter about `centre`, as a share: the larger of 1.4826
// x the median absolute deviation of their logs and the logs' standard deviation (0 for one value). The median
// deviation alone is not widened by one odd run, but of 3 runs it is the nearer of the other two to the median, near
// 0 by chance: quick.toml's sendrecv of 8 KiB ran at 1.60, 1.63 and 1.97 GB/s (2.8% by it alone, 12.2% by the
// standard deviation), then at 2.62 and 1.17. With few runs the wider of the two is the safer.
double run_scatter(const std::vector<double>& values, double centre);

}  // namespace gpuscale
