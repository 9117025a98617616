// The watchdog's policy over one case: setup and warm-up get a bound from the
// start; then (timeout = auto) each timed sample's bound comes from the
// slowest sample yet, so a dead peer ends a quick case in seconds while a slow
// case is never cut short. Disarmed when the case ends; when it ends in an
// exception on this rank, armed instead with a short bound for the way to
// the job's abort.
#pragma once

#include <algorithm>
#include <string>

#include "comm/mpi_communicator.hpp"
#include "runner/case_timeout.hpp"
#include "runner/watchdog.hpp"

namespace gpuscale {

class CaseWatch {
 public:
  // The bound from a failure on this rank, while its exception unwinds, to the job's abort.
  static constexpr double kFailedEndS = 20.0;

  // `watchdog` null: nothing is watched. `what` names the case in the watchdog's message.
  CaseWatch(Watchdog* watchdog, CaseTimeout timeout, std::string what, double warmup_s);
  ~CaseWatch();
  CaseWatch(const CaseWatch&) = delete;
  CaseWatch& operator=(const CaseWatch&) = delete;

  // Arms the bound of setup and warm-up (of the case, or of a serial turn).
  void start();
  // A warm-up sample took `wall` seconds on this rank.
  void warm_sample(double wall) { slowest_ = std::max(slowest_, wall); }
  // Collective, once every rank's warm-up ended: agrees on the slowest sample
  // and arms the timed samples' bound; `mine`: this rank runs them now (in
  // serial mode the others wait `reps` samples of another turn).
  void timed_start(const MpiCommunicator& comm, bool mine, int reps);
  // A timed sample took `wall` seconds: the next one (or the verification) gets its bound afresh.
  void timed_sample(double wall);
  // Starts a new turn's warm-up: its slowest sample is measured afresh.
  void new_turn() { slowest_ = 0.0; }
  bool automatic() const { return timeout_.automatic(); }

 private:
  Watchdog* watchdog_;
  CaseTimeout timeout_;
  std::string what_;
  double warmup_s_;
  double slowest_ = 0.0;     // wall time of this turn's slowest sample yet (warm-up included)
  bool timed_armed_ = false;  // the watchdog holds the timed bound: progress only moves its deadline
  int unwinding_;             // exceptions in flight when the case started: more at its end, and it failed here
};

}  // namespace gpuscale
