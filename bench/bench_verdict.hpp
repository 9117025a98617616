// What transfer_bench and harness_bench share: the target for harness / bare, which samples are left out because
// other work held a core, when a row is judged at all, the words of the verdict and the exit statuses.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "core/intervals.hpp"
#include "core/stats.hpp"

namespace gpuscale::bench {

constexpr double kLow = 0.95, kHigh = 1.05;  // harness / bare, both ways

// Exit statuses: every row judged and inside the target; a row outside it (or a harness case failed); none outside,
// but some not judged.
constexpr int kMet = 0, kOutside = 1, kNotJudged = 3;

// A sample in which a rank's thread that ran it (bare: the thread of the loop; harness: the stream's worker, the
// sample's core_wait) waited for a core this share of the sample or more is left out, on both sides alike: the
// target's width (on a quiet machine 64 MiB samples that waited up to 10 % took no longer than the others).
constexpr double kDisturbed = 0.05;
// A row is judged when each side keeps at least this many undisturbed samples, however many were left out (both sides
// are filtered alike): enough for a 95 % interval of the ratio of their medians (core/intervals.hpp); and when that
// interval is no wider than the target (kHigh - kLow): under load the kept samples scatter too, and a ratio known
// only within 0.90-1.10 says nothing about 0.95-1.05.
constexpr std::size_t kMinKept = kMinIntervalSamples;

// NaN (the wait is not known: no schedstat) is not disturbed: nothing can be left out on either side.
inline bool disturbed(double wait_s, double time_s) { return wait_s >= kDisturbed * time_s; }

// One side's samples: the value of each (per-op seconds, mean over ranks), and of those in which no rank was disturbed.
struct Samples {
  std::vector<double> all, kept;
  void add(const Samples& more) {
    all.insert(all.end(), more.all.begin(), more.all.end());
    kept.insert(kept.end(), more.kept.begin(), more.kept.end());
  }
};

// `t` and `wait`: every rank's seconds per sample, rank-major ([ranks][reps], as a case's device_time and core_wait;
// `wait` empty: not known); each sample's value is the mean over ranks of t / iters.
inline Samples keep_undisturbed(const std::vector<double>& t, const std::vector<double>& wait, int ranks, int reps,
                                int iters) {
  Samples out;
  const bool known = wait.size() == t.size();
  for (int i = 0; i < reps; ++i) {
    double sum = 0;
    bool any = false;
    for (int r = 0; r < ranks; ++r) {
      const std::size_t at = static_cast<std::size_t>(r) * reps + i;
      sum += t[at];
      any = any || (known && disturbed(wait[at], t[at]));
    }
    out.all.push_back(sum / ranks / iters);
    if (!any) out.kept.push_back(out.all.back());
  }
  return out;
}

// harness/bare of a row: bare time / harness time, the medians of the kept samples, and its 95 % interval (none with
// fewer than kMinKept on a side).
struct Ratio {
  double value = NAN;
  std::optional<Interval> interval;
};

inline Ratio ratio_of(const Samples& bare, const Samples& harness) {
  Ratio r;
  if (bare.kept.empty() || harness.kept.empty()) return r;
  r.value = median(bare.kept) / median(harness.kept);
  r.interval = ratio_interval(median_interval(bare.kept), median_interval(harness.kept));
  return r;
}

inline std::string three_places(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", x);
  return buf;
}

// Why a row is not judged, first part ("" where it passes): a side with too few undisturbed samples.
inline std::string too_few(std::size_t bare_kept, std::size_t bare_all, std::size_t harness_kept,
                           std::size_t harness_all) {
  if (bare_kept >= kMinKept && harness_kept >= kMinKept) return "";
  return "other work held the cores: undisturbed samples: bare " + std::to_string(bare_kept) + " of " +
         std::to_string(bare_all) +
         ", harness " + std::to_string(harness_kept) + " of " + std::to_string(harness_all) + "; a side needs " +
         std::to_string(kMinKept);
}

// Second part: the ratio's interval wider than the target, unless it lies wholly beyond one of its bounds (however
// wide, it then says which way the harness is off).
inline std::string too_loose(const Interval& i) {
  if (i.hi - i.lo <= kHigh - kLow + 1e-12 || i.lo > kHigh || i.hi < kLow) return "";
  return "the samples scatter: harness/bare is within " + three_places(i.lo) + "-" + three_places(i.hi) +
         " (95 %), wider than the target (more --rounds narrow it)";
}

// Why a row is not judged ("" where it is).
inline std::string why_not_judged(const Samples& bare, const Samples& harness, const Ratio& r) {
  const std::string few = too_few(bare.kept.size(), bare.all.size(), harness.kept.size(), harness.all.size());
  if (!few.empty()) return few;
  return r.interval ? too_loose(*r.interval) : "no interval of harness/bare";
}

// The words after a row's harness/bare: none inside the target, else the direction and what it means.
inline std::string verdict(double ratio) {
  if (ratio > kHigh) return " ABOVE target: the harness is faster than the bare loop: one of them times something else";
  if (ratio < kLow) return " BELOW target: the harness is slower than the bare loop: it costs time";
  return "";
}

// --judge RATIO [--judge-kept BARE_KEPT,BARE_ALL,HARNESS_KEPT,HARNESS_ALL] [--judge-interval LO,HI]: the verdict on
// known numbers, measuring nothing (no MPI), so that a test checks the words and the exit status.
struct JudgeOptions {
  double ratio = 0;
  std::vector<std::size_t> kept;  // empty, or the four counts
  std::vector<double> interval;   // empty, or the ratio's 95 % interval
};

#ifdef CLI11_VERSION  // the benches include CLI11 first; a unit test of the rest of this header needs none
inline void add_judge_options(CLI::App& app, JudgeOptions& j) {
  CLI::Option* ratio = app.add_option("--judge", j.ratio, "print the verdict on harness/bare = RATIO and exit with "
                                                          "its status; measures nothing (no MPI)")
                           ->check(CLI::PositiveNumber);
  app.add_option("--judge-kept", j.kept, "with --judge: each side's undisturbed and all samples, "
                                         "BARE_KEPT,BARE_ALL,HARNESS_KEPT,HARNESS_ALL (is the row judged at all?)")
      ->delimiter(',')
      ->expected(4)
      ->needs(ratio);
  app.add_option("--judge-interval", j.interval, "with --judge: the 95 % interval of harness/bare, LO,HI")
      ->delimiter(',')
      ->expected(2)
      ->needs(ratio);
}
#endif

// Prints the verdict and returns its exit status; 2 with one line on stderr where a side keeps more than it has or
// the interval is upside down.
inline int judge_only(const JudgeOptions& j, const char* program) {
  if (!j.kept.empty() && (j.kept[0] > j.kept[1] || j.kept[2] > j.kept[3])) {
    std::fprintf(stderr, "%s: --judge-kept: a side keeps more samples than it has\n", program);
    return 2;
  }
  if (!j.interval.empty() && !(j.interval[0] <= j.interval[1])) {
    std::fprintf(stderr, "%s: --judge-interval: LO above HI\n", program);
    return 2;
  }
  std::string why = j.kept.empty() ? "" : too_few(j.kept[0], j.kept[1], j.kept[2], j.kept[3]);
  if (why.empty() && !j.interval.empty()) why = too_loose(Interval{j.interval[0], j.interval[1]});
  if (!why.empty()) {
    std::printf("harness/bare %.3f: not judged (%s)\n", j.ratio, why.c_str());
    return kNotJudged;
  }
  const std::string v = verdict(j.ratio);
  std::printf("harness/bare %.3f:%s\n", j.ratio, v.empty() ? " inside target 0.95-1.05" : v.c_str());
  return v.empty() ? kMet : kOutside;
}

}  // namespace gpuscale::bench
