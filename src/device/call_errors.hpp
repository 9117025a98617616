// The CUDA runtime's last-error rule, handled in one place. The runtime keeps
// one last error per thread: every failing call sets it, cudaGetLastError()
// returns and clears it, and a query of a stream or event that is still busy
// "fails" with cudaErrorNotReady. A launch can only be checked through that
// last error, so a NotReady left by a poll (or an error already handled and
// reported) would fail the next launch. Here, a query's NotReady means "not
// yet" and is cleared, and a launch clears what came before and checks only
// what it set itself. No CUDA header: `Runtime` supplies the codes and the
// take-and-clear call (CudaRuntime in cuda_check.hpp; a test double in the
// unit tests).
#pragma once

namespace gpuscale {

struct QueryAnswer {
  bool done = false;
  int error = 0;  // 0: none (done, or not yet); else the query's own error, for the caller to report
};

// `query` returns a status: success (done), not ready (not yet, and cleared), or an error.
template <class Runtime, class Query>
QueryAnswer query_done(Query&& query) {
  const int rc = static_cast<int>(query());
  if (rc == Runtime::success) return {true, 0};
  Runtime::take_last();  // NotReady, or an error the caller reports now: neither is left for a later launch
  if (rc == Runtime::not_ready) return {false, 0};
  return {false, rc};
}

// `launch` enqueues a kernel (a <<<>>> launch sets nothing but the last error); the result is that launch's own
// error, or success.
template <class Runtime, class Launch>
int launch_checked(Launch&& launch) {
  Runtime::take_last();  // an earlier call's error was that call's to report
  launch();
  return Runtime::take_last();
}

}  // namespace gpuscale
