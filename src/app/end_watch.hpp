// The end of a run: once its last case is done, a rank frozen (SIGSTOP)
// before it exits would keep the launcher waiting for ever, and its own
// watchdog, a thread of the stopped process, cannot fire. So each rank forks
// a watcher before MPI (or CUDA, or any registered memory) starts; from the
// end of the run on, a stop of the rank that lasts the run's edge bound makes
// the watcher print who it was and kill it (SIGKILL: a stopped process takes
// no SIGTERM), and the launcher then ends the job. The watcher exits as soon
// as the rank has, however it ended.
#pragma once

#include <string>

namespace gpuscale {

class EndWatch {
 public:
  EndWatch();  // forks the watcher (does nothing where fork fails: the end is then unwatched)
  ~EndWatch();
  EndWatch(const EndWatch&) = delete;
  EndWatch& operator=(const EndWatch&) = delete;

  // From now on, a stop of this process that lasts `seconds` makes the watcher print `line` to standard error
  // and kill it. Once: a later call changes nothing.
  void arm(const std::string& line, double seconds);

 private:
  bool armed_ = false;
  int to_watcher_ = -1;  // this end of the socket to the watcher: its close (this process exiting) ends the watcher
};

// A process's state letter from /proc/PID/stat ('R', 'S', 'T' stopped, ...; '?' where the line is not as
// expected); 0 once it is gone (no entry, or a zombie).
char process_state(int pid);

}  // namespace gpuscale
