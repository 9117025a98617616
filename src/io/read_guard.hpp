// While a result file is read: a crash inside the HDF5 library (a damaged
// file can lead it astray, e.g. one in the format of schema 1.3 and before,
// whose strings, its schema version's too, sit in a heap without a checksum)
// ends the process with the one line
//   gpuscale: error: PATH: damaged result file: the HDF5 library crashed reading it (SIGSEGV)
// and a read step that stops making progress (a loop inside the library) with
//   gpuscale: error: PATH: damaged result file: the HDF5 library did not finish reading it in 15 s
// and one that keeps reading far past what the file holds (a loop that reads) with
//   gpuscale: error: PATH: damaged result file: the HDF5 library read 8 times the file's size and more without
//   finishing
// all with exit code 2, never a bare signal or a hang.
#pragma once

#include <signal.h>
#include <sys/time.h>

#include <chrono>
#include <string>

namespace gpuscale {

// How long a read step may go without reading from any file before it is taken for a loop: reading never waits on
// anything else, and a step that keeps reading (a large case on a slow disk) is not cut short by it.
constexpr std::chrono::milliseconds kReadStall{15'000};
// What a read step may read, in all, before it is taken for a loop that reads: this many times the file's size (as
// it was when the guard was armed), and kReadVolumeSlack more. Reading a file reads each of its bytes about once.
constexpr long long kReadVolumeFactor = 8;
constexpr long long kReadVolumeSlack = 1LL << 30;

class ReadGuard {
 public:
  // Prepares the lines for `path`; nothing is installed before arm().
  explicit ReadGuard(const std::string& path, std::chrono::milliseconds stall = kReadStall);
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
  // Starts the stall watch too: a real-time timer (SIGALRM, syscalls restarted)
  // ticks every stall / kStallTicks and looks at the bytes the process has read
  // (/proc/self/io's rchar); kStallTicks ticks in a row without a byte read
  // end the process, as does a read past kReadVolumeFactor times the file's
  // size. Where /proc/self/io cannot be read, the step is bounded by the
  // stall time itself.
  void arm();
  // Puts back stderr, the handlers, the timer and the signal stack there were before arm().
  void disarm();

  static constexpr int kStallTicks = 8;

 private:
  std::string crash_line_;  // the message up to the signal's name
  std::string stall_line_;  // the whole message
  std::string volume_line_;
  std::string path_;
  std::chrono::milliseconds stall_;
  bool armed_ = false;
  const std::string* outer_crash_ = nullptr;  // the guard armed before this one, if any
  const std::string* outer_stall_ = nullptr;
  const std::string* outer_volume_ = nullptr;
  long long outer_start_ = -1, outer_limit_ = -1;
  int outer_fd_ = -1;
  int stderr_fd_ = -1;  // the real stderr while armed
  struct sigaction old_[6] {};  // the five crash signals, then SIGALRM
  stack_t old_stack_{};
  itimerval old_timer_{};
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
