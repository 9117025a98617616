// An input file is checked before anything opens it: opening a FIFO waits
// for a writer, and a device or a directory is never what was meant.
#pragma once

#include <string>

namespace gpuscale {

// InputError, one line, at once: "PATH: no such file", "PATH: is a directory, not a WHAT", "PATH: is a FIFO, not a
// WHAT" (a device, a socket alike). A symbolic link to a regular file is fine. `what`: "result file", "model file".
void check_input_file(const std::string& path, const std::string& what);

}  // namespace gpuscale
