#include "runner/case_watch.hpp"

#include <exception>

namespace gpuscale {

namespace {
constexpr const char* kTimedWhy = "timeout = auto: from the last sample, 10 x the slowest sample yet, at least 30 s";
}  // namespace

CaseWatch::CaseWatch(Watchdog* watchdog, CaseTimeout timeout, std::string what, double warmup_s)
    : watchdog_(watchdog),
      timeout_(timeout),
      what_(std::move(what)),
      warmup_s_(warmup_s),
      unwinding_(std::uncaught_exceptions()) {}

CaseWatch::~CaseWatch() {
  if (!watchdog_) return;
  if (std::uncaught_exceptions() > unwinding_) {
    // This rank failed: it says so and aborts the job (MPI_Abort) once unwound. What lies on the way (a
    // communicator's end, a device's last synchronize) may wait on peers that are still inside the case: bounded.
    watchdog_->arm(what_ + ", after this rank failed in it,", kFailedEndS,
                   "the way from a rank's failure to the job's abort");
    return;
  }
  watchdog_->disarm();
}

void CaseWatch::start() {
  if (!watchdog_) return;
  watchdog_->arm(what_, timeout_.start_s(warmup_s_),
                 timeout_.automatic() ? "timeout = auto: setup and warm-up get 60 s + 2 x warmup_s" : "");
}

void CaseWatch::timed_start(const MpiCommunicator& comm, bool mine, int reps) {
  if (!watchdog_ || !timeout_.automatic()) return;
  slowest_ = comm.max(slowest_, !mine);
  timed_armed_ = mine && slowest_ > 0;
  if (slowest_ <= 0) {
    watchdog_->arm(what_, timeout_.start_s(warmup_s_),
                   "timeout = auto: no warm-up sample to go by, 60 s + 2 x warmup_s");
  } else if (mine) {
    watchdog_->arm(what_, timeout_.timed_s(slowest_, warmup_s_), kTimedWhy);
  } else {
    watchdog_->arm(what_, timeout_.waiting_s(reps, slowest_, warmup_s_),
                   "timeout = auto: waiting for another turn, 10 x its samples at the slowest rate, at least 300 s");
  }
}

void CaseWatch::timed_sample(double wall) {
  slowest_ = std::max(slowest_, wall);
  if (!watchdog_ || !timeout_.automatic()) return;
  const double bound = timeout_.timed_s(slowest_, warmup_s_);
  if (timed_armed_) {
    watchdog_->extend(bound);
  } else {
    watchdog_->arm(what_, bound, kTimedWhy);
    timed_armed_ = true;
  }
}

}  // namespace gpuscale
