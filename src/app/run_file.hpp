// Rank 0's result file during a run, shared by the main thread (cases as
// they finish), the watchdog (a case past its timeout) and the signal thread
// (SIGTERM from mpirun or Slurm): whoever ends the run writes how it ended,
// never in the middle of a case being written, and puts the file where it
// belongs (output_path.hpp). A full disk ends the run cleanly: a case whose
// records do not fit is not run, and a write that fails anyway leaves every
// case before it and says so.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "app/output_path.hpp"
#include "io/result_writer.hpp"

namespace gpuscale {

class RunFile {
 public:
  // Creates the file: `target.path` itself, or beside it when replacing it.
  // Throws what ResultWriter throws (the name taken meanwhile, a full disk).
  RunFile(const OutputTarget& target, const RunRecord& run);

  const std::string& target() const { return target_; }
  const std::string& written() const { return written_; }

  // The case now running ("case 3 of 8 (label)"), for a run that ends during it; "": none.
  void set_current(const std::string& what);
  std::string current() const;
  // Where the run is, for a run that ends now: "during case 3 of 8 (label)"; "after case 3 of 8 (label)" once
  // that case is in the file and the next one not begun; "outside any case" before the first.
  std::string where() const;
  std::size_t cases_written() const;

  // "" when records of about `bytes` fit the free space, keeping room for
  // the end of the run; else the message that ends the run (one line).
  std::string room_for(std::uint64_t bytes);
  // Each writes, or returns the message that ends the run (one line) once
  // the file is ended with the failure as its status, and put in place.
  std::string write_case(const CaseRecord& rec);
  std::string add_warning(const std::string& line);
  std::string write_data_plane(int communicators, double setup_s);
  // The normal end: complete (or failed verification), with the end clock estimates.
  std::string finish(const std::string& status, const std::vector<RankRecord>& ranks);
  // An abnormal end, from any thread: marks the file incomplete with `status`
  // ("aborted: SIGTERM during case ...", "timed out: case ...", "failed: ...")
  // unless the run already ended. Waits at most a few seconds for a write in
  // progress; returns false when it could not write.
  bool end_early(const std::string& status) noexcept;
  // Once ended: "" or why the file was not moved over the target (settle()).
  std::string kept_note() const;
  // Where the file is: written() while the run goes on, then target() unless it was kept.
  std::string location() const;

 private:
  // Closes the file (it ended) and moves it over the target when replacing one.
  void close_and_settle() noexcept;
  std::string failed(const std::exception& e, const std::string& writing);
  // Runs `write` on the writer unless the run ended: "", or the message of failed() (`writing`: what was being
  // written; "": the current case).
  template <class Write>
  std::string written_or_ended(Write&& write, const std::string& writing);
  mutable std::timed_mutex mu_;
  std::unique_ptr<ResultWriter> writer_;
  std::unique_ptr<TargetLock> lock_;  // on the file replaced (--force), until it is
  std::string target_, written_;
  std::string current_;
  std::string last_written_;  // the case written last, while no other is current
  std::string kept_note_;
  std::size_t cases_at_end_ = 0;  // what the writer wrote, once it is gone
  bool ended_ = false;
};

// "during case 3 of 8 (gemm size=64 [serial])" / "outside any case".
std::string during(const std::string& current);

}  // namespace gpuscale
