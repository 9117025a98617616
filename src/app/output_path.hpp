// Where a run's result file goes: checked before any rank starts work (a
// mistake exits 2 and writes nothing), and written without destroying
// anything: a new file is created where asked, never over one that appeared
// meanwhile; a file that exists (--force) stays whole until the run ends and
// is then replaced by the one written beside it.
#pragma once

#include <fstream>
#include <string>

namespace gpuscale {

struct OutputTarget {
  std::string path;      // the file asked for, symbolic links followed
  bool replace = false;  // it exists (--force): written beside it, renamed over it when the run ends
};

// The target of `-o out`; InputError (one line) when it cannot be written:
// a directory, a device, a FIFO, a dangling symbolic link, a file that exists
// (without --force) or that another process is writing, a directory that is
// missing or takes no new file (read-only, permissions, a name too long), a
// full disk.
OutputTarget check_output(const std::string& out, bool force);

// The directory of default result files, results/: created, and checked as above.
void check_default_output_dir();

// results/<config stem>[-job<SLURM_JOB_ID>]-<timestamp>[-N].h5, not an existing file.
std::string default_output(const std::string& config);

// The directory a file is (to be) in: "." for a bare name.
std::string directory_of(const std::string& path);

// The file a run replacing `target` writes: beside it, "<target>.partial-<pid>".
std::string partial_path(const std::string& target);

// Once the run ended: moves `written` over `target` (nothing when they are
// the same file). Returns "" or why `written` was kept under its own name.
std::string settle(const std::string& written, const std::string& target);

// A file written beside `path` ("<path>.partial") and moved over it once whole, so that a write cut short never
// leaves a file there (report --format trace -o, model -o). Not committed: the partial file is removed. InputError
// (one line) when it cannot be opened, written or moved.
class FileBeside {
 public:
  explicit FileBeside(std::string path);
  ~FileBeside();
  FileBeside(const FileBeside&) = delete;
  FileBeside& operator=(const FileBeside&) = delete;
  std::ostream& stream() { return out_; }
  void commit();

 private:
  std::string path_, tmp_;
  std::ofstream out_;
  bool done_ = false;
};

}  // namespace gpuscale
