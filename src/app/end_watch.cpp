#include "app/end_watch.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace gpuscale {

char process_state(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return 0;
  const std::size_t close = stat.rfind(')');  // the name, in parentheses, may hold anything
  if (close == std::string::npos || close + 2 >= stat.size()) return '?';
  const char state = stat[close + 2];
  return state == 'Z' || state == 'X' ? 0 : state;
}

namespace {

// What the rank sends its watcher, once.
struct Armed {
  double seconds = 0;
  char line[1024] = {};
};

// Everything below runs in the forked watcher of a process with threads: system calls only (no allocation, no
// locks another thread may have held at the fork).

double monotonic_s() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// The state letter of /proc/PID/stat, as process_state gives it, read with system calls alone.
char raw_state(const char* stat_path) {
  const int fd = open(stat_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[1024];
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  const char* close_paren = nullptr;
  for (ssize_t i = 0; i < n; ++i) close_paren = buf[i] == ')' ? buf + i : close_paren;
  if (!close_paren || close_paren + 2 >= buf + n) return '?';
  const char state = close_paren[2];
  return state == 'Z' || state == 'X' ? 0 : state;
}

// Leaves the watcher standard error and its socket (as descriptor 3), nothing of the launcher's (its PMI socket, the
// rank's standard output), and signals as a new process has them.
void become_watcher(int from_rank) {
  prctl(PR_SET_NAME, "gpuscale-watch", 0, 0, 0);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (from_rank != 3) {
    dup2(from_rank, 3);
    close(from_rank);
  }
  const int null = open("/dev/null", O_RDWR);
  if (null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
    if (null > 3) close(null);
  }
  if (syscall(SYS_close_range, 4U, ~0U, 0U) != 0) {
    rlimit files{};
    const rlim_t top = getrlimit(RLIMIT_NOFILE, &files) == 0 ? std::min<rlim_t>(files.rlim_cur, 65536) : 1024;
    for (rlim_t fd = 4; fd < top; ++fd) close(static_cast<int>(fd));
  }
}

// Reads the one message, then watches `rank` until it has exited (its socket closes) or been stopped for the armed
// number of seconds.
[[noreturn]] void watch(pid_t rank, const char* stat_path) {
  Armed armed;
  std::size_t got = 0;
  while (got < sizeof armed) {
    const ssize_t n = read(3, reinterpret_cast<char*>(&armed) + got, sizeof armed - got);
    if (n == 0 || (n < 0 && errno != EINTR)) _exit(0);  // the rank ended before its run did: nothing to watch
    got += n > 0 ? static_cast<std::size_t>(n) : 0;
  }
  armed.line[sizeof armed.line - 1] = '\0';
  double stopped_since = -1;
  for (;;) {
    pollfd end{3, POLLIN, 0};
    const int ready = poll(&end, 1, 20);
    if (ready > 0 || (ready < 0 && errno != EINTR) || getppid() != rank) _exit(0);
    const char state = raw_state(stat_path);
    if (state == 0) _exit(0);
    const double now = monotonic_s();
    if (state != 'T') {
      stopped_since = -1;
    } else if (stopped_since < 0) {
      stopped_since = now;
    } else if (now - stopped_since >= armed.seconds) {
      const ssize_t wrote = write(2, armed.line, std::strlen(armed.line));
      (void)wrote;
      kill(rank, SIGKILL);
      _exit(0);
    }
  }
}

}  // namespace

EndWatch::EndWatch() {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return;
  const pid_t rank = getpid();
  char stat_path[64];
  std::snprintf(stat_path, sizeof stat_path, "/proc/%d/stat", static_cast<int>(rank));
  const pid_t child = fork();
  if (child == 0) {
    close(fds[1]);
    become_watcher(fds[0]);
    watch(rank, stat_path);
  }
  close(fds[0]);
  if (child < 0) {
    close(fds[1]);
    return;
  }
  to_watcher_ = fds[1];
}

EndWatch::~EndWatch() {
  if (to_watcher_ >= 0) close(to_watcher_);
}

void EndWatch::arm(const std::string& line, double seconds) {
  if (to_watcher_ < 0 || armed_) return;
  armed_ = true;
  Armed armed;
  armed.seconds = seconds;
  std::snprintf(armed.line, sizeof armed.line, "%s\n", line.c_str());
  // MSG_NOSIGNAL: a watcher gone early (no SIGPIPE here) leaves the end unwatched, as a failed fork does.
  const ssize_t sent = send(to_watcher_, &armed, sizeof armed, MSG_NOSIGNAL);
  (void)sent;
}

}  // namespace gpuscale
