#include "workloads/node_pair_recheck.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/clock.hpp"
#include "core/stats.hpp"
#include "workloads/collective_pattern.hpp"
#include "workloads/node_pairs.hpp"

namespace gpuscale {

namespace {

// Seconds of this member's end of `iters` exchanges with `partner`, from a common start to its end.
double timed_exchange(CaseContext& ctx, const PairExchange& x, int partner, std::int64_t iters) {
  const double t0 = clock_now();
  x.run(partner, iters);
  ctx.synchronize();
  return clock_now() - t0;
}

// Every member's screening time of every round ([member * rounds + round]; 0 where it rested).
std::vector<double> screen_all(CaseContext& ctx, const PairExchange& x, std::int64_t iters, int rounds) {
  const int n = ctx.size(), me = ctx.rank();
  std::vector<double> mine(static_cast<std::size_t>(rounds), 0.0);
  for (int round = 0; round < rounds; ++round) {
    x.barrier();
    ctx.synchronize();
    const int partner = node_pair_partner(me, round, n);
    if (partner >= 0) mine[static_cast<std::size_t>(round)] = timed_exchange(ctx, x, partner, iters);
  }
  // Shared through the data plane, as the sweep's own data: device buffers on a GPU.
  const std::size_t bytes = mine.size() * sizeof(double);
  DeviceBuffer send = ctx.dev.alloc(bytes), recv = ctx.dev.alloc(bytes * static_cast<std::size_t>(n));
  ctx.dev.copy_to_device(send, mine.data(), bytes);
  ctx.data().allgather(send.data(), recv.data(), mine.size(), DType::fp64);
  ctx.synchronize();
  std::vector<double> all(mine.size() * static_cast<std::size_t>(n));
  ctx.dev.copy_async(all.data(), recv.data(), bytes * static_cast<std::size_t>(n), CopyKind::d2h);
  ctx.dev.synchronize();
  return all;
}

CaseTable empty_rechecks() {
  CaseTable t;
  t.name = kRechecksTable;
  t.description = "the sweep's second look: one untimed screening sweep after the samples, then every pair below "
                  "the threshold of the best run again alone; one row per member and round it exchanged in";
  t.attrs = {{"threshold", kNodePairThreshold}};
  t.columns = {int_column("round", "the round of the pair (as in table pairs)", ColumnRange::positive),
               real_column("sweep_seconds", "s", "this end's time of the round in the screening sweep"),
               real_column("alone_seconds", "s", "median time of this end with the pair alone; NaN: not run again "
                           "(the screen found the pair at or above the threshold)"),
               int_column("alone_samples", "how many times the pair ran alone (0: not run again)")};
  return t;
}

}  // namespace

CaseTable recheck_slow_pairs(CaseContext& ctx, const PairExchange& x, std::int64_t iters, std::int64_t reps) {
  const int n = ctx.size(), me = ctx.rank(), rounds = node_pair_rounds(n);
  const std::vector<double> all = screen_all(ctx, x, iters, rounds);
  const auto at = [&](int member, int round) { return all[static_cast<std::size_t>(member * rounds + round)]; };
  // A pair's round took as long as its slower end; the fastest pair is the best.
  double best = INFINITY;
  for (int round = 0; round < rounds; ++round) {
    for (int a = 0; a < n; ++a) {
      const int b = node_pair_partner(a, round, n);
      if (b > a) best = std::min(best, std::max(at(a, round), at(b, round)));
    }
  }
  CaseTable t = empty_rechecks();
  for (int round = 0; round < rounds; ++round) {
    std::vector<double> alone;  // this member's pair of the round, where it ran again
    for (int a = 0; a < n; ++a) {  // the same order on every member: the pairs alone, one after another
      const int b = node_pair_partner(a, round, n);
      if (b <= a || !(best / std::max(at(a, round), at(b, round)) < kNodePairThreshold)) continue;
      for (std::int64_t s = 0; s < reps; ++s) {
        x.barrier();
        ctx.synchronize();
        if (me == a || me == b) alone.push_back(timed_exchange(ctx, x, me == a ? b : a, iters));
      }
    }
    if (node_pair_partner(me, round, n) < 0) continue;  // this member rested
    t.columns[0].ints.push_back(round + 1);
    t.columns[1].reals.push_back(at(me, round));
    t.columns[2].reals.push_back(alone.empty() ? NAN : median(alone));
    t.columns[3].ints.push_back(static_cast<std::int64_t>(alone.size()));
  }
  return t;
}

}  // namespace gpuscale
