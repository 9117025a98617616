// While a result file is read: a crash inside the HDF5 library (a damaged
// file can lead it astray, e.g. files before schema 1.4, whose strings sit
// in a heap without a checksum) ends the process with the one line
//   gpuscale: error: PATH: damaged result file: the HDF5 library crashed reading it (SIGSEGV)
// and exit code 2, never a bare signal.
#pragma once

#include <signal.h>

#include <string>

namespace gpuscale {

class ReadGuard {
 public:
  // Prepares the line for `path`; nothing is installed before arm().
  explicit ReadGuard(const std::string& path);
  ~ReadGuard();  // disarms
  ReadGuard(const ReadGuard&) = delete;
  ReadGuard& operator=(const ReadGuard&) = delete;

  // Installs the handlers of SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT (on
  // an alternate signal stack: a corrupted stack still reaches them), and
  // sends what is written to stderr to /dev/null until disarm(): what the C
  // library or HDF5 may print on their way down (glibc's "free(): invalid
  // pointer") would make the message more than one line. HDF5's own error
  // printing is off anyway (hdf5_quiet), and errors found while reading are
  // thrown, then printed once the guard is disarmed.
  void arm();
  // Puts back stderr, the handlers and the signal stack there were before arm().
  void disarm();

 private:
  std::string line_;  // the message up to the signal's name
  bool armed_ = false;
  const std::string* outer_ = nullptr;  // the guard armed before this one, if any
  int outer_fd_ = -1;
  int stderr_fd_ = -1;  // the real stderr while armed
  struct sigaction old_[5] {};
  stack_t old_stack_{};
};

// Runs `f` with the guard armed, disarmed again however `f` ends.
template <class F>
auto guarded(ReadGuard& guard, F&& f) -> decltype(f()) {
  struct Arm {
    ReadGuard& g;
    explicit Arm(ReadGuard& x) : g(x) { g.arm(); }
    ~Arm() { g.disarm(); }
  } arm(guard);
  return f();
}

}  // namespace gpuscale
