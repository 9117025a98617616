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
pthread_t g_waiter;  // the thread in sigwait

// Threads started before main (OpenBLAS's pool, at load time) do not block the signals, and one may take a signal
// meant for the process: passed on to the thread that waits for it, rather than ending the process with a file half
// written. pthread_kill is async-signal-safe.
void pass_on(int sig) { pthread_kill(g_waiter, sig); }

}  // namespace

void block_termination_signals() {
  const sigset_t s = termination_set();
  pthread_sigmask(SIG_BLOCK, &s, nullptr);
}

void start_termination_thread() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::thread waiter([] {
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
    });
    g_waiter = waiter.native_handle();
    waiter.detach();
    struct sigaction sa {};
    sa.sa_handler = pass_on;
    sigfillset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (const int sig : {SIGTERM, SIGINT, SIGHUP}) sigaction(sig, &sa, nullptr);
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
