// Reads a result file back into a RunRecord (no MPI needed).
#pragma once

#include <functional>
#include <string>

#include "io/result_model.hpp"

namespace gpuscale {

// Throws InputError, one line that starts with `path: `, when the file is
// missing, not an HDF5 file, not a gpuscale result file, or damaged:
// "PATH: damaged result file: <what was found>" (a checksum mismatch, a
// truncation, a missing or impossible attribute or dataset). What the report
// relies on is checked (shapes, indices, counts, finite sample times), so a
// case read back never indexes out of range. A file before schema 1.7 is one
// line naming the last commit that reads it.
//
// The file is opened without HDF5's file locking, so the file of a run still
// going reads as it stands at its last flush (RunRecord::being_written set); a
// live file that reads as damaged is read again a few times first (its writer
// may have been half-way through a flush), and then says so: "... (read while
// a run was writing it)".
RunRecord read_result_file(const std::string& path);

// Whether a run is writing the file now: a process holds a lock on it that
// keeps out a shared one (HDF5 takes flock(LOCK_EX) on creating a file and
// holds it until the file is closed; readers that lock take LOCK_SH, which
// does not count), or a write lock on its bytes (fcntl, open file
// description: what gpuscale holds on a file it replaces, app/output_path.hpp).
bool being_written(const std::string& path);

// Where `visit` runs: on the calling thread, or, for a case of 2^16 samples or
// more, on a second thread while the next case is read (reading and the
// visit's work overlap; memory holds two cases' samples). A visit that may run
// there must not call HDF5. Visits run one at a time and in order either way.
enum class VisitOn { caller, either_thread };

// The same, one case at a time: `visit` gets the run (its cases left empty)
// and each case in turn, read only then; what `visit` leaves of it is
// overwritten by a later one (its sample memory reused), so memory holds one
// case's samples at a time (two with VisitOn::either_thread). Returns the run,
// its cases left empty. Exceptions from `visit` pass through unchanged.
RunRecord read_result_file(const std::string& path,
                           const std::function<void(const RunRecord& run, CaseRecord&& c)>& visit,
                           VisitOn on = VisitOn::caller);

}  // namespace gpuscale
