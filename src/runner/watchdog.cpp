#include "runner/watchdog.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>

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

void Watchdog::on_timeout(std::function<void()> f) {
  std::lock_guard<std::mutex> lock(mu_);
  on_timeout_ = std::move(f);
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
      if (on_timeout_) {
        // An abort may itself block (a proxy thread waiting on a dead peer): give it 5 s at most.
        auto done = std::make_shared<std::atomic<bool>>(false);
        std::thread([f = on_timeout_, done] {
          f();
          *done = true;
        }).detach();
        for (int i = 0; i < 500 && !*done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      // No unwinding: the main thread may be inside MPI or a BLAS call.
      std::_Exit(kExitTimeout);
    }
  }
}

}  // namespace gpuscale
