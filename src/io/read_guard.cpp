#include "io/read_guard.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/exit_cleanup.hpp"

namespace gpuscale {

namespace {

constexpr int kSignals[5] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

// The armed guard's lines and where to write them (the real stderr); read by
// the handlers, so set before they are installed.
std::atomic<const std::string*> g_crash_line{nullptr};
std::atomic<const std::string*> g_stall_line{nullptr};
std::atomic<int> g_fd{STDERR_FILENO};
// The stall watch: the process's bytes read as of the last look, and the ticks since the last that saw more.
std::atomic<long long> g_last_read{-1};
std::atomic<int> g_stalled{0};
// The volume bound: the bytes read when the guard was armed, and how many more it may read (-1: none).
std::atomic<long long> g_read_start{-1};
std::atomic<long long> g_read_limit{-1};
std::atomic<const std::string*> g_volume_line{nullptr};

// An alternate stack for the handler (a stack overflow or a smashed stack pointer still reaches it).
alignas(16) char g_stack[64 * 1024];

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    default: return "a signal";
  }
}

void write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = write(fd, p, n);
    if (w <= 0) return;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

// The bytes the process had read from files and pipes before this very read
// of /proc/self/io, or -1; `after` the figure with this read counted, what
// the next call gives when nothing else was read in between.
// Async-signal-safe: open, read, close and arithmetic.
long long bytes_read(long long& after) {
  after = -1;
  const int fd = open("/proc/self/io", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[512];
  const ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  const char key[] = "rchar: ";  // the first line
  const ssize_t k = sizeof key - 1;
  if (n <= k || std::memcmp(buf, key, static_cast<std::size_t>(k)) != 0) return -1;
  long long v = 0;
  for (ssize_t i = k; i < n && buf[i] >= '0' && buf[i] <= '9'; ++i) v = v * 10 + (buf[i] - '0');
  after = v + n;
  return v;
}

// Async-signal-safe: write(2) and _exit(2) only, on text prepared before.
extern "C" void on_crash(int sig) {
  const std::string* line = g_crash_line.load();
  const int fd = g_fd.load();
  if (line) {
    write_all(fd, line->data(), line->size());
    const char* name = signal_name(sig);
    write_all(fd, name, std::strlen(name));
    write_all(fd, ")\n", 2);
  }
  remove_registered_files();
  _exit(2);
}

// A tick of the stall watch (SIGALRM). Keeps errno: the tick may land inside any call.
extern "C" void on_tick(int) {
  const int saved = errno;
  long long after = -1;
  const long long now = bytes_read(after);
  const bool progress = now >= 0 && now != g_last_read.load();
  g_last_read.store(after);
  const long long limit = g_read_limit.load();
  if (now >= 0 && limit >= 0 && now - g_read_start.load() > limit) {
    const std::string* line = g_volume_line.load();
    if (line) write_all(g_fd.load(), line->data(), line->size());
    remove_registered_files();
    _exit(2);
  }
  if (progress) {
    g_stalled.store(0);
  } else if (g_stalled.fetch_add(1) + 1 >= ReadGuard::kStallTicks) {
    const std::string* line = g_stall_line.load();
    if (line) write_all(g_fd.load(), line->data(), line->size());
    remove_registered_files();
    _exit(2);
  }
  errno = saved;
}

std::string seconds(std::chrono::milliseconds t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(t.count()) / 1000.0);
  return buf;
}

itimerval tick_timer(std::chrono::milliseconds stall) {
  const long long us = std::max<long long>(1000, stall.count() * 1000 / ReadGuard::kStallTicks);
  itimerval t{};
  t.it_interval.tv_sec = static_cast<time_t>(us / 1000000);
  t.it_interval.tv_usec = static_cast<suseconds_t>(us % 1000000);
  t.it_value = t.it_interval;
  return t;
}

}  // namespace

ReadGuard::ReadGuard(const std::string& path, std::chrono::milliseconds stall)
    // The same form as every other error of the command line (app/main.cpp's print_error).
    : crash_line_("gpuscale: error: " + path + ": damaged result file: the HDF5 library crashed reading it ("),
      stall_line_("gpuscale: error: " + path + ": damaged result file: the HDF5 library did not finish reading it in " +
                  seconds(stall) + " s\n"),
      volume_line_("gpuscale: error: " + path + ": damaged result file: the HDF5 library read " +
                   std::to_string(kReadVolumeFactor) + " times the file's size and more without finishing\n"),
      path_(path),
      stall_(stall) {}

ReadGuard::~ReadGuard() { disarm(); }

void ReadGuard::arm() {
  if (armed_) return;
  std::fflush(stderr);
  stderr_fd_ = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
  if (stderr_fd_ >= 0) {
    const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
      dup2(null, STDERR_FILENO);
      close(null);
    }
  }
  outer_fd_ = g_fd.exchange(stderr_fd_ >= 0 ? stderr_fd_ : STDERR_FILENO);
  outer_crash_ = g_crash_line.exchange(&crash_line_);
  outer_stall_ = g_stall_line.exchange(&stall_line_);
  stack_t st{};
  st.ss_sp = g_stack;
  st.ss_size = sizeof g_stack;
  st.ss_flags = 0;
  sigaltstack(&st, &old_stack_);
  struct sigaction sa {};
  sa.sa_handler = on_crash;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_ONSTACK | SA_NODEFER | SA_RESETHAND;
  for (int i = 0; i < 5; ++i) sigaction(kSignals[i], &sa, &old_[i]);
  struct sigaction tick {};
  tick.sa_handler = on_tick;
  sigemptyset(&tick.sa_mask);
  tick.sa_flags = SA_RESTART;  // HDF5's reads, and ours, go on where a tick interrupts them
  sigaction(SIGALRM, &tick, &old_[5]);
  long long after = -1;
  bytes_read(after);
  g_last_read.store(after);
  g_stalled.store(0);
  struct stat st_file {};
  const long long size = stat(path_.c_str(), &st_file) == 0 ? static_cast<long long>(st_file.st_size) : 0;
  outer_volume_ = g_volume_line.exchange(&volume_line_);
  outer_start_ = g_read_start.exchange(after);
  outer_limit_ = g_read_limit.exchange(after >= 0 ? kReadVolumeFactor * size + kReadVolumeSlack : -1);
  const itimerval t = tick_timer(stall_);
  setitimer(ITIMER_REAL, &t, &old_timer_);
  armed_ = true;
}

void ReadGuard::disarm() {
  if (!armed_) return;
  setitimer(ITIMER_REAL, &old_timer_, nullptr);  // first: no tick comes after the handler is gone
  g_stalled.store(0);  // an outer guard's watch goes on afresh
  for (int i = 0; i < 5; ++i) sigaction(kSignals[i], &old_[i], nullptr);
  sigaction(SIGALRM, &old_[5], nullptr);
  sigaltstack(&old_stack_, nullptr);
  g_crash_line.store(outer_crash_);
  g_stall_line.store(outer_stall_);
  g_volume_line.store(outer_volume_);
  g_read_start.store(outer_start_);
  g_read_limit.store(outer_limit_);
  g_fd.store(outer_fd_);
  if (stderr_fd_ >= 0) {
    dup2(stderr_fd_, STDERR_FILENO);
    close(stderr_fd_);
    stderr_fd_ = -1;
  }
  armed_ = false;
}

}  // namespace gpuscale
