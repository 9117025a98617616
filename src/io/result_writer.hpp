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
  // Marks the run complete (or not, with its status) and stores end clock offsets.
  void finish(bool complete, const std::string& status, const std::vector<RankRecord>& ranks);
  // The run ended early: complete = 0 and how it ended ("aborted: SIGTERM ...").
  void mark_ended(const std::string& status);

 private:
  void flush();
  H5Id file_;
  H5Id cases_;
};

}  // namespace gpuscale
