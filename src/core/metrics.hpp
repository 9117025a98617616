// The derived numbers the report prints, in one place so their definitions
// (see docs/metrics.md) are tested once.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace gpuscale {

// Samples are stored [ranks][reps], row-major: x[r * reps + i].

// serial mode: the ranks of one turn ran together and turns ran one after
// another, so sample i took the sum over turns of the turn's makespan. With
// every rank its own turn (device-local work) that is the sum of durations.
std::vector<double> serial_turn_totals(const std::vector<double>& start, const std::vector<double>& end,
                                       const std::vector<std::int64_t>& turn, int ranks, int reps);

// Transfers, as nccl-tests times them: one operation of sample i took the
// mean over ranks of device_time / iters.
std::vector<double> mean_op_times(const std::vector<double>& device_time, int ranks, int reps, int iters);

// The same per sample, least and most over ranks instead of the mean (so
// least <= mean <= most in every sample, and so in their medians).
std::pair<std::vector<double>, std::vector<double>> op_time_extremes(const std::vector<double>& device_time, int ranks,
                                                                     int reps, int iters);

// parallel mode: sample i took max(end) - min(start) over ranks (common clock).
std::vector<double> makespans(const std::vector<double>& start, const std::vector<double>& end, int ranks, int reps);

// Median of each rank's samples.
std::vector<double> rank_medians(const std::vector<double>& x, int ranks, int reps);

// One sample of each rank: end - start.
std::vector<double> durations(const std::vector<double>& start, const std::vector<double>& end);

double gemm_flops(double m, double n, double k);  // 2mnk
double speedup(double serial_s, double parallel_s);
double efficiency(double speedup, double workers);  // speedup / ranks, turns or group_size

}  // namespace gpuscale
