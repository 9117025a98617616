// Rank 0's result file during a run, shared by the main thread (cases as
// they finish), the watchdog (a case past its timeout) and the signal thread
// (SIGTERM from mpirun or Slurm): whoever ends the run writes how it ended,
// and never in the middle of a case being written.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "io/result_writer.hpp"

namespace gpuscale {

class RunFile {
 public:
  explicit RunFile(std::unique_ptr<ResultWriter> writer) : writer_(std::move(writer)) {}

  // The case now running, for the status of a run that ends during it.
  void set_current(const std::string& what);
  void write_case(const CaseRecord& rec);
  void add_warning(const std::string& line);
  // The normal end: complete (or failed verification), with the end clock estimates.
  void finish(const std::string& status, const std::vector<RankRecord>& ranks);
  // An abnormal end, from any thread: marks the file incomplete with `status`
  // ("aborted: SIGTERM during case ...", "timed out: case ...", "failed: ...")
  // unless the run already ended. Waits at most a few seconds for a write in
  // progress; returns false when it could not write.
  bool end_early(const std::string& status) noexcept;
  std::string current() const;

 private:
  mutable std::timed_mutex mu_;
  std::unique_ptr<ResultWriter> writer_;
  std::string current_;
  bool ended_ = false;
};

// "during case 3 (gemm size=64 [serial])" / "before the first case" / "after the last case".
std::string during(const std::string& current);

}  // namespace gpuscale
