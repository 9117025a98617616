#include "core/exit_cleanup.hpp"

#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstring>

namespace gpuscale {

namespace {

// A slot is claimed (state 1), filled, then published (2): a signal handler reads only published slots.
struct Slot {
  std::atomic<int> state{0};
  char path[PATH_MAX];
};
Slot g_slots[kCleanupSlots];

}  // namespace

int register_file_to_remove(const std::string& path) {
  if (path.empty() || path.size() >= PATH_MAX) return -1;
  for (int i = 0; i < kCleanupSlots; ++i) {
    int free_state = 0;
    if (!g_slots[i].state.compare_exchange_strong(free_state, 1)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].state.store(2);
    return i;
  }
  return -1;
}

void unregister_file_to_remove(int slot) {
  if (slot >= 0 && slot < kCleanupSlots) g_slots[slot].state.store(0);
}

void remove_registered_files() noexcept {
  for (auto& s : g_slots) {
    if (s.state.load() == 2) unlink(s.path);
  }
}

}  // namespace gpuscale
