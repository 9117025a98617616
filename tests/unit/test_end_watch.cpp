// The watcher at the end of a run (app/end_watch.hpp), on a forked child standing in for a rank.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "app/end_watch.hpp"

using namespace gpuscale;

namespace {

// A child that runs `body` with its standard error into a pipe; the pipe's read end.
template <typename Body>
pid_t child_with_stderr(int& err_read, Body body) {
  int err[2];
  REQUIRE(pipe(err) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    dup2(err[1], 2);
    close(err[0]);
    close(err[1]);
    body();
    _exit(0);
  }
  close(err[1]);
  err_read = err[0];
  return child;
}

// The child's wait status once it has ended, or -1 after `seconds` (the child is then killed).
int ended_within(pid_t child, double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int status = 0;
  while (std::chrono::steady_clock::now() < until) {
    if (waitpid(child, &status, WNOHANG) == child) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(child, SIGKILL);
  waitpid(child, &status, 0);
  return -1;
}

// What the child and its watcher wrote to standard error, until both closed it (at most 10 s).
std::string all_of(int fd) {
  std::string text;
  char buf[512];
  pollfd p{fd, POLLIN, 0};
  while (poll(&p, 1, 10000) > 0) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  close(fd);
  return text;
}

}  // namespace

TEST_CASE("a rank stopped past the armed bound is killed by its watcher, which prints the line armed first",
          "[end_watch]") {
  int err = -1;
  const pid_t child = child_with_stderr(err, [] {
    EndWatch watch;
    watch.arm("rank 9 on test: stopped", 0.2);
    watch.arm("a second line: not taken", 0.2);
    raise(SIGSTOP);
  });
  const int status = ended_within(child, 10);
  REQUIRE(status != -1);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  CHECK(all_of(err) == "rank 9 on test: stopped\n");
}

TEST_CASE("before it is armed, the watcher leaves a stopped rank alone, and it ends with its rank", "[end_watch]") {
  int err = -1;
  const pid_t child = child_with_stderr(err, [] {
    EndWatch watch;
    raise(SIGSTOP);
  });
  int status = 0;
  REQUIRE(waitpid(child, &status, WUNTRACED) == child);
  REQUIRE(WIFSTOPPED(status));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  CHECK(waitpid(child, &status, WNOHANG | WUNTRACED) == 0);  // still stopped, not killed
  kill(child, SIGCONT);
  status = ended_within(child, 10);
  REQUIRE(status != -1);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(all_of(err).empty());  // and the watcher closed its standard error: it ended too
}
