#include "app/termination_guard.hpp"

#include <csignal>

namespace gpuscale {

namespace {
volatile std::sig_atomic_t g_guarded = 0;
volatile std::sig_atomic_t g_pending = 0;
constexpr int kSignals[] = {SIGTERM, SIGINT, SIGHUP};

void die_of(int sig) {
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

extern "C" void on_signal(int sig) {
  if (g_guarded) {
    g_pending = sig;
  } else {
    die_of(sig);
  }
}
}  // namespace

TerminationGuard::TerminationGuard() {
  static const bool installed = [] {
    for (int s : kSignals) std::signal(s, on_signal);
    return true;
  }();
  (void)installed;
  g_guarded = 1;
}

TerminationGuard::~TerminationGuard() {
  g_guarded = 0;
  if (g_pending) die_of(g_pending);
}

}  // namespace gpuscale
