// Typed errors and the exit codes the command line returns for them.
#pragma once

#include <stdexcept>
#include <string>

namespace gpuscale {

enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,  // the run went wrong (verification failed, a call failed, no case ran)
  kExitUsage = 2,    // bad input: config, flags, files; nothing was written
  kExitTimeout = 3,  // a case ran past its timeout; the job was aborted
};

// Bad input from the user: the message is one sentence that names what to fix.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A failure while running (library call, I/O, verification).
class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Memory that could not be had, host or device, said in words ("out of host memory allocating 1.9 GB"); the
// runner adds the case it happened in.
class OutOfMemory : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
};

}  // namespace gpuscale
