// Writes a run's result file case by case. The file is flushed after every
// case and carries complete = 0 until finish(), so a run killed half-way
// leaves a readable file with every finished case, marked incomplete. On
// disk the file changes only at a flush, and only after its blocks are
// allocated: a write that fails (a full disk) leaves what the last flush
// wrote, to which end_after_failure() adds how the run ended.
#pragma once

#include <cstdint>
#include <string>

#include "io/hdf5_handle.hpp"
#include "io/result_model.hpp"

namespace gpuscale {

// Bytes kept free for the end of a run (its status, warnings and clock
// estimates) beyond what each case needs.
constexpr std::uint64_t kEndReserveBytes = 64 * 1024;

class ResultWriter {
 public:
  // Creates `path`, which must not exist, and writes the run's attributes,
  // rank table and plan (run.cases is ignored). When that fails, nothing is
  // left behind. Throws NoSpaceError (io/disk_space.hpp) on a full disk.
  ResultWriter(const std::string& path, const RunRecord& run);
  ~ResultWriter();
  ResultWriter(const ResultWriter&) = delete;
  ResultWriter& operator=(const ResultWriter&) = delete;

  // Each writes and flushes, or throws (NoSpaceError: the records do not fit
  // the free space, checked before anything is written); after a throw only
  // end_after_failure() may follow. write_case writes each of the case's
  // tables that has rows; one the reader would call damaged (columns of
  // different lengths, a level out of its levels, a name taken) is a
  // RuntimeError before anything is written.
  void write_case(const CaseRecord& c);
  // One more line for the file's `warnings` (what makes numbers doubtful).
  void add_warning(const std::string& line);
  // The data plane's set-up, once it is made (RunRecord::data_plane_communicators, data_plane_setup_s).
  void write_data_plane(int communicators, double setup_s);
  // Marks the run complete (or not, with its status) and stores end clock
  // offsets; a rank whose end estimate is better than its start one has
  // every time it wrote moved onto it (see apply_better_clock).
  void finish(bool complete, const std::string& status, const std::vector<RankRecord>& ranks);
  // The run ended early: complete = 0 and how it ended ("aborted: SIGTERM ...").
  void mark_ended(const std::string& status);
  // After a call above threw: closes the file without writing what that call
  // left half-done, so that it holds what the last flush wrote, then opens it
  // again to record `status` (complete = 0) in place, which takes no new
  // space. False when even that failed (the file then says "running").
  bool end_after_failure(const std::string& status) noexcept;
  // Flushes and closes the file; nothing is written after.
  void close();

  const std::string& path() const { return path_; }
  std::size_t cases_written() const { return cases_written_; }

 private:
  void write_header(const RunRecord& run);
  // Per rank, the better of the two clock estimates (end_clock_is_better):
  // /ranks/clock_*_applied, and the wall times of every case, and every
  // table column on the common clock (attribute clock = "common"), moved onto it.
  void apply_better_clock(const std::vector<RankRecord>& ranks);
  void flush();
  std::string path_;
  H5Id file_;
  H5Id cases_;
  int fd_ = -1;           // HDF5's descriptor of the file, whose blocks flush() allocates
  std::string warnings_;  // the `warnings` attribute, one per line
  std::size_t cases_written_ = 0;
  bool broken_ = false;  // a write failed half-way: the file must not be flushed again
};

// About the bytes a case takes in the file: before it runs, from its shape
// (warm-up samples kept per rank: at most 1000) and its number of datasets
// (8 for device-local work; 14 for transfers) ...
std::uint64_t case_bytes(std::uint64_t ranks, std::uint64_t reps, std::uint64_t warmup_kept, int datasets);
// ... once it ran, from what it holds ...
std::uint64_t record_bytes(const CaseRecord& c);
// ... and the file before its first case.
std::uint64_t header_bytes(const RunRecord& run);

}  // namespace gpuscale
