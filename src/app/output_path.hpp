// The one rule for every file gpuscale writes (run's result file, model's
// JSON, the trace): checked before any work starts (a mistake exits 2 and
// writes nothing), then written without destroying anything.
// - An existing path needs --force; it may never be one of the command's
//   inputs (the same file by device and inode, however it is spelt) nor a
//   file another process is writing (its lock).
// - Only a regular file or a new name: a directory, device, FIFO or socket is
//   refused; a symbolic link is followed only with --force, and the messages
//   then name its target.
// - The file is written beside its place under a name of its own
//   ("<target>.partial-<pid>", created with O_EXCL), synced, and moved into
//   place once whole; the temporary file is removed on every way out (an
//   error, SIGTERM/SIGINT/SIGHUP, the read guard's exit: core/exit_cleanup.hpp).
// - A file being replaced is locked (flock) until it is: two writers of one
//   file cannot both succeed.
#pragma once

#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace gpuscale {

struct OutputTarget {
  std::string path;      // the file written: -o itself, or the file its symbolic link leads to (--force)
  bool replace = false;  // it exists (--force): written beside it, moved over it once whole
  std::string link;      // -o as given when it is a symbolic link ("" otherwise)
};

// The target of `-o out`; InputError (one line) when it cannot be written:
// a directory, a device, a FIFO, a socket, a symbolic link (without --force;
// a dangling one always), one of `inputs`, a file that exists (without
// --force) or that another process is writing, a directory that is missing
// or takes no new file (read-only, permissions, a name too long), a full disk.
OutputTarget check_output(const std::string& out, bool force, const std::vector<std::string>& inputs = {});

// The directory of default result files, results/: created, and checked as above.
void check_default_output_dir();

// results/<config stem>[-job<SLURM_JOB_ID>]-<timestamp>[-N].h5, not an existing file.
std::string default_output(const std::string& config);

// The directory a file is (to be) in: "." for a bare name.
std::string directory_of(const std::string& path);

// The file written beside `target` before it takes its place: "<target>.partial-<pid>".
std::string partial_path(const std::string& target);

// An exclusive lock (flock) on an existing file for as long as this lives, as a writer of it holds: being_written()
// is then true for everyone else. InputError (one line, naming `out`) when another process holds one.
class TargetLock {
 public:
  TargetLock(const std::string& path, const std::string& out);
  ~TargetLock();
  TargetLock(const TargetLock&) = delete;
  TargetLock& operator=(const TargetLock&) = delete;

 private:
  int fd_ = -1;
};

// Once the run ended: moves `written` over `target` (nothing when they are the same file). `locked`: this process
// holds the target's lock (TargetLock), so no other is writing it. Returns "" or why `written` was kept under its own
// name.
std::string settle(const std::string& written, const std::string& target, bool locked = false);

// A file written beside its target and moved into place once whole (report --format trace -o, model -o): created
// at once (InputError, one line, when it cannot be), removed unless committed, on every way out.
class FileBeside {
 public:
  explicit FileBeside(const OutputTarget& target);
  ~FileBeside();
  FileBeside(const FileBeside&) = delete;
  FileBeside& operator=(const FileBeside&) = delete;
  std::ostream& stream() { return out_; }
  const std::string& temporary() const { return tmp_; }
  // Flushes, syncs and moves the file into place; InputError (one line) when it could not be written whole, or
  // when, given no --force, a file of that name appeared meanwhile.
  void commit();
  // What the commands print of where the file went: the path, and the link it was asked by, if any.
  std::string where() const;

 private:
  OutputTarget target_;
  std::string tmp_;
  std::unique_ptr<TargetLock> lock_;
  std::ofstream out_;
  int cleanup_slot_ = -1;
  bool done_ = false;
};

}  // namespace gpuscale
