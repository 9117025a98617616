#include "runner/watchdog.hpp"

#include <cstdio>
#include <cstdlib>

#include "core/error.hpp"

namespace gpuscale {

Watchdog::Watchdog(std::string who) : who_(std::move(who)), thread_([this] { loop(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Watchdog::arm(const std::string& what, double seconds) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    armed_ = true;
    what_ = what;
    seconds_ = seconds;
    deadline_ = std::chrono::steady_clock::now() +
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
  }
  cv_.notify_all();
}

void Watchdog::disarm() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    armed_ = false;
  }
  cv_.notify_all();
}

void Watchdog::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (!armed_) {
      cv_.wait(lock);
      continue;
    }
    if (cv_.wait_until(lock, deadline_) == std::cv_status::timeout && armed_ && !stop_ &&
        std::chrono::steady_clock::now() >= deadline_) {
      std::fprintf(stderr, "gpuscale: error: %s: case %s ran past its timeout of %g s; aborting the job\n",
                   who_.c_str(), what_.c_str(), seconds_);
      std::fflush(stderr);
      // No unwinding: the main thread may be inside MPI or a BLAS call.
      std::_Exit(kExitTimeout);
    }
  }
}

}  // namespace gpuscale
