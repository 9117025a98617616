// Ends the whole job when a case runs past its timeout, so that a hung rank
// never leaves the others (or a Slurm allocation) waiting forever.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace gpuscale {

class Watchdog {
 public:
  // `who` names this rank in the message ("rank 1 on node2").
  explicit Watchdog(std::string who);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Starts timing `what`; after `seconds` the process prints why and exits
  // with kExitTimeout (mpirun then ends the other ranks).
  void arm(const std::string& what, double seconds);
  void disarm();
  // Runs before the process exits on a timeout (e.g. aborting NCCL
  // communicators), for at most a few seconds. Set before arm().
  void on_timeout(std::function<void()> f);

 private:
  void loop();
  std::string who_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool armed_ = false, stop_ = false;
  std::string what_;
  std::function<void()> on_timeout_;
  double seconds_ = 0.0;
  std::chrono::steady_clock::time_point deadline_;
  std::thread thread_;
};

}  // namespace gpuscale
