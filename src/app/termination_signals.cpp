#include "app/termination_signals.hpp"

#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "core/exit_cleanup.hpp"

namespace gpuscale {

namespace {

sigset_t termination_set() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGTERM);
  sigaddset(&s, SIGINT);
  sigaddset(&s, SIGHUP);
  return s;
}

std::mutex g_mu;
std::function<void(int)> g_hook;

}  // namespace

void block_termination_signals() {
  const sigset_t s = termination_set();
  pthread_sigmask(SIG_BLOCK, &s, nullptr);
}

void start_termination_thread() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::thread([] {
      const sigset_t s = termination_set();
      int sig = 0;
      while (sigwait(&s, &sig) != 0) {
      }
      std::function<void(int)> hook;
      {
        std::lock_guard<std::mutex> lock(g_mu);
        hook = g_hook;
      }
      if (hook) hook(sig);
      remove_registered_files();  // a file half written beside its place (FileBeside)
      std::fflush(stdout);
      std::fflush(stderr);
      std::_Exit(128 + sig);  // no unwinding: the main thread may be inside MPI or a BLAS call
    }).detach();
  });
}

void set_termination_hook(std::function<void(int)> hook) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_hook = std::move(hook);
}

const char* signal_name(int signal) {
  switch (signal) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    default: return "a signal";
  }
}

}  // namespace gpuscale
