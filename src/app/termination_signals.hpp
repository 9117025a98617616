// SIGTERM, SIGINT and SIGHUP (mpirun or Slurm ending the job, Ctrl-C) are
// taken by one thread of their own instead of interrupting whatever the
// process is doing, so that rank 0 can write how the run ended into its file
// before it exits.
#pragma once

#include <functional>

namespace gpuscale {

// Blocks the signals in the calling thread and in every thread it starts
// later (MPI's included): call first thing, before MPI_Init.
void block_termination_signals();

// Starts the thread that waits for them (once per process). On a signal it
// runs the hook set last, if any, removes the files registered to be removed
// (core/exit_cleanup.hpp), then exits with 128 + the signal number. A thread
// started before main (OpenBLAS's pool) that takes one passes it on to it.
void start_termination_thread();

// The hook (e.g. rank 0 marking its file "aborted: SIGTERM"); empty: none.
// It runs on the signal thread; it may wait a few seconds at most.
void set_termination_hook(std::function<void(int signal)> hook);

const char* signal_name(int signal);  // "SIGTERM", ...

}  // namespace gpuscale
