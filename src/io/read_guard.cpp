#include "io/read_guard.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>

namespace gpuscale {

namespace {

constexpr int kSignals[5] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

// The armed guard's line and where to write it (the real stderr); read by the
// handler, so set before it is installed.
std::atomic<const std::string*> g_line{nullptr};
std::atomic<int> g_fd{STDERR_FILENO};

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

// Async-signal-safe: write(2) and _exit(2) only, on text prepared before.
extern "C" void on_crash(int sig) {
  const std::string* line = g_line.load();
  const int fd = g_fd.load();
  if (line) {
    write_all(fd, line->data(), line->size());
    const char* name = signal_name(sig);
    write_all(fd, name, std::strlen(name));
    write_all(fd, ")\n", 2);
  }
  _exit(2);
}

}  // namespace

ReadGuard::ReadGuard(const std::string& path)
    // The same form as every other error of the command line (app/main.cpp's print_error).
    : line_("gpuscale: error: " + path + ": damaged result file: the HDF5 library crashed reading it (") {}

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
  outer_ = g_line.exchange(&line_);
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
  armed_ = true;
}

void ReadGuard::disarm() {
  if (!armed_) return;
  for (int i = 0; i < 5; ++i) sigaction(kSignals[i], &old_[i], nullptr);
  sigaltstack(&old_stack_, nullptr);
  g_line.store(outer_);
  g_fd.store(outer_fd_);
  if (stderr_fd_ >= 0) {
    dup2(stderr_fd_, STDERR_FILENO);
    close(stderr_fd_);
    stderr_fd_ = -1;
  }
  armed_ = false;
}

}  // namespace gpuscale
