// Holds back SIGTERM/SIGINT/SIGHUP while rank 0 writes a case, so that mpirun
// or Slurm ending the job cannot cut a case group in half: the signal takes
// effect, as it would have, right after the write is flushed.
#pragma once

namespace gpuscale {

class TerminationGuard {
 public:
  TerminationGuard();
  ~TerminationGuard();
  TerminationGuard(const TerminationGuard&) = delete;
  TerminationGuard& operator=(const TerminationGuard&) = delete;
};

}  // namespace gpuscale
