// How long each stage of a case may run before the job is aborted. A fixed
// `timeout` bounds the whole case; the default (timeout = 0, "auto") derives
// the bound of the timed samples from the case's own samples, so that a dead
// peer ends a quick case in seconds while a slow case is not cut short.
#pragma once

namespace gpuscale {

struct CaseTimeout {
  // Setup and warm-up (of each turn in serial mode): nothing is known yet.
  static constexpr double kStartFloorS = 60.0;
  // Timed samples and verification: `kFactor` times the expected time, at least `kTimedFloorS`.
  static constexpr double kTimedFloorS = 30.0;
  static constexpr double kFactor = 10.0;

  double fixed_s = 0.0;  // > 0: the case's `timeout`, one bound for all of it

  bool automatic() const { return fixed_s <= 0.0; }
  // The bound from the start of the case (or of a serial turn) to the end of its warm-up.
  double start_s(double warmup_s) const;
  // The bound of the next timed sample (or the verification) when the
  // slowest sample yet (at first warm-up's, of any rank) took `slowest_s`.
  // Every finished sample starts it afresh: a case that keeps going is never
  // cut short, however slow it gets; one that stops is ended within it.
  // Without a sample to go by (0) start_s applies.
  double timed_s(double slowest_s, double warmup_s) const;
  // A rank waiting for another turn (serial mode) cannot see its progress:
  // 10 x the time of the turn's `samples` at the slowest rate, at least 10 x
  // the floor; the turn's own ranks end a hung turn first.
  double waiting_s(int samples, double slowest_s, double warmup_s) const;
  // Rank 0 writing a case of about `bytes` while the others wait to go on:
  // the fixed timeout, or (auto) the setup floor, plus 1 s per 10 MB (a slow
  // shared file system's pace).
  double write_s(double bytes) const;
  // Each edge of the run (kRunEdgeTimeoutS on auto, else the timeout, at least kRunEdgeFloorS).
  double edge_s() const;
  static constexpr double kSlowWriteBytesPerS = 10e6;
};

// Seconds each edge of a run may take on `timeout` = auto: MPI's start, the
// start of the run (the common clock, the rank table, the plan's agreement,
// the file's opening), its end (the end clock estimate) and MPI's finalize.
constexpr double kRunEdgeTimeoutS = 120.0;
// With a fixed `timeout`, each edge takes that, but never less than this: MPI's start on a loaded node or a large
// job takes seconds however quick its cases are.
constexpr double kRunEdgeFloorS = 30.0;

}  // namespace gpuscale
