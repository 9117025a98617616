#include "runner/watchdog.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "core/error.hpp"
#include "core/exit_cleanup.hpp"

namespace gpuscale {

Watchdog::Watchdog(std::string who, double late_s)
    : who_(std::move(who)), late_s_(late_s), thread_([this] { loop(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Watchdog::arm(const std::string& what, double seconds, const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    armed_ = true;
    what_ = what;
    why_ = why.empty() ? "" : " (" + why + ")";
    seconds_ = seconds;
    deadline_ = std::chrono::steady_clock::now() +
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds + late_s_));
  }
  cv_.notify_all();
}

void Watchdog::extend(double seconds) {
  // No wake-up (it may come every few microseconds): a later deadline is found when the earlier one passes.
  std::lock_guard<std::mutex> lock(mu_);
  seconds_ = seconds;
  deadline_ = std::chrono::steady_clock::now() +
              std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                  std::chrono::duration<double>(seconds + late_s_));
}

std::size_t Watchdog::on_timeout(std::function<void(const std::string&, double)> f) {
  std::lock_guard<std::mutex> lock(mu_);
  on_timeout_.push_back(std::move(f));
  return on_timeout_.size() - 1;
}

void Watchdog::forget(std::size_t hook) {
  std::lock_guard<std::mutex> lock(mu_);
  if (hook < on_timeout_.size()) on_timeout_[hook] = nullptr;
}

void Watchdog::set_who(std::string who) {
  std::lock_guard<std::mutex> lock(mu_);
  who_ = std::move(who);
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
      std::fprintf(stderr, "gpuscale: error: %s: %s ran past its timeout of %g s%s; aborting the job\n",
                   who_.c_str(), what_.c_str(), seconds_, why_.c_str());
      std::fflush(stderr);
      if (!on_timeout_.empty()) {
        // An abort may itself block (a proxy thread waiting on a dead peer): give them 5 s at most.
        auto done = std::make_shared<std::atomic<bool>>(false);
        std::thread([fs = on_timeout_, what = what_, seconds = seconds_, done] {
          for (const auto& f : fs) {
            if (f) f(what, seconds);
          }
          *done = true;
        }).detach();
        for (int i = 0; i < 500 && !*done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      // No unwinding: the main thread may be inside MPI or a BLAS call.
      remove_registered_files();
      std::_Exit(kExitTimeout);
    }
  }
}

}  // namespace gpuscale
