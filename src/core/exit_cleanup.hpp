// Files to remove however the process ends: a temporary file written beside
// its place (app/output_path.hpp) must not outlive an error, a termination
// signal, or the read guard's exit from a crash inside the HDF5 library.
// remove_registered_files() is async-signal-safe, so a signal handler may call it.
#pragma once

#include <string>

namespace gpuscale {

// Registers `path` (at most kCleanupSlots at once); returns its slot, or -1 when none is free or the path is too
// long (the file is then only removed on the normal ways out).
int register_file_to_remove(const std::string& path);
// The file is whole (moved into place) or gone: not to be removed any more.
void unregister_file_to_remove(int slot);
// Removes every registered file: unlink(2) only, no allocation, no lock.
void remove_registered_files() noexcept;

constexpr int kCleanupSlots = 8;

}  // namespace gpuscale
