// Writes a run's result file case by case. The file is flushed after every
// case and carries complete = 0 until finish(), so a run killed half-way
// leaves a readable file with every finished case, marked incomplete.
#pragma once

#include <string>

#include "io/hdf5_handle.hpp"
#include "io/result_model.hpp"

namespace gpuscale {

class ResultWriter {
 public:
  // Creates `path`; fails if it exists unless `overwrite`. Writes the run's
  // attributes and rank table (run.cases is ignored).
  ResultWriter(const std::string& path, bool overwrite, const RunRecord& run);
  void write_case(const CaseRecord& c);
  // Marks the run complete (or not, with its status) and stores end clock
  // offsets; a rank whose end estimate is better than its start one has
  // every time it wrote moved onto it (see apply_better_clock).
  void finish(bool complete, const std::string& status, const std::vector<RankRecord>& ranks);
  // One more line for the file's `warnings` (what makes numbers doubtful), written at once.
  void add_warning(const std::string& line);
  // The run ended early: complete = 0 and how it ended ("aborted: SIGTERM ...").
  void mark_ended(const std::string& status);

 private:
  // Per rank, the better of the two clock estimates (end_clock_is_better):
  // /ranks/clock_*_applied, and the wall times, phases and telemetry of
  // every case moved onto it.
  void apply_better_clock(const std::vector<RankRecord>& ranks);
  void flush();
  H5Id file_;
  H5Id cases_;
  std::string warnings_;  // the `warnings` attribute, one per line
};

}  // namespace gpuscale
