// Ends the whole job when a case runs past its timeout, so that a hung rank
// never leaves the others (or a Slurm allocation) waiting forever. Every rank
// has its own: a rank cut off from the others (a link down) exits by itself
// instead of waiting for the launcher to notice.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gpuscale {

class Watchdog {
 public:
  // `who` names this rank in the message ("rank 1 on node2"). `late_s` is
  // added to every deadline: ranks other than 0 fire a little after rank 0,
  // so that rank 0 records the timeout in the file before the launcher
  // ends it.
  explicit Watchdog(std::string who, double late_s = 0.0);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Starts timing `what` ("case gemm size=64 [serial]") afresh; after
  // `seconds` the process says so (with `why` the timeout is what it is, if
  // given) and exits with kExitTimeout (the launcher then ends the other ranks).
  void arm(const std::string& what, double seconds, const std::string& why = "");
  // The same `what`, `seconds` from now (the work is making progress).
  void extend(double seconds);
  void disarm();
  // Once MPI tells it: the name in the message.
  void set_who(std::string who);
  // Runs before the process exits on a timeout (aborting NCCL communicators,
  // marking the file), given what timed out and its timeout, for at most a
  // few seconds in all. Returns a number for forget(): what `f` refers to
  // may end before the watchdog does.
  std::size_t on_timeout(std::function<void(const std::string& what, double seconds)> f);
  void forget(std::size_t hook);

 private:
  void loop();
  std::string who_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool armed_ = false, stop_ = false;
  std::string what_, why_;
  std::vector<std::function<void(const std::string&, double)>> on_timeout_;
  double seconds_ = 0.0, late_s_ = 0.0;
  std::chrono::steady_clock::time_point deadline_;
  std::thread thread_;
};

}  // namespace gpuscale
