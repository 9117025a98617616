#include "app/output_path.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "app/run_metadata.hpp"
#include "core/error.hpp"
#include "core/exit_cleanup.hpp"
#include "core/text.hpp"
#include "io/disk_space.hpp"
#include "io/result_reader.hpp"
#include "io/result_writer.hpp"

namespace fs = std::filesystem;

namespace gpuscale {

namespace {

// The directory of `file` takes new files named like it: it is writable (a file of our own is created there and
// removed again, by each rank on its own), the name fits, and there is some room.
void check_creatable(const std::string& out, const std::string& file) {
  const std::string dir = directory_of(file);
  const long name_max = pathconf(dir.c_str(), _PC_NAME_MAX);
  if (name_max > 0 && fs::path(file).filename().string().size() > static_cast<std::size_t>(name_max)) {
    throw InputError(out + ": the name is too long for its file system (at most " + std::to_string(name_max) +
                     " bytes" + (file.size() > out.size() ? "; a --force run writes " + file + " first" : "") + ")");
  }
  const std::string probe = (fs::path(dir) / (".gpuscale-probe-" + std::to_string(getpid()))).string();
  const int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int e = errno;
    if (e == ENOSPC || e == EDQUOT) throw InputError(out + ": " + no_space_text(free_bytes(dir)));
    throw InputError(out + ": cannot create a file in '" + dir + "' (" + std::strerror(e) + ")");
  }
  ::close(fd);
  unlink(probe.c_str());
  // Room for the file's start and end at least; run checks the whole plan once it knows its ranks.
  if (const auto left = free_bytes(dir); left < 2 * kEndReserveBytes) {
    throw InputError(out + ": " + no_space_text(left));
  }
}

std::string busy_text(const std::string& out) {
  return out + ": another process is writing it (a gpuscale run still going?); wait for it to end, or choose "
               "another -o";
}

// The file a symbolic link at `out` leads to (followed only with --force), or InputError.
std::string follow(const std::string& out, bool force) {
  std::error_code ec;
  const std::string to = fs::read_symlink(out, ec).string();
  const fs::path real = fs::canonical(out, ec);
  if (ec) throw InputError(out + ": a symbolic link to '" + to + "', which does not exist; give a file name with -o");
  if (!force) {
    throw InputError(out + ": a symbolic link to '" + real.string() + "'; use --force to write that file, or give a "
                           "file name with -o");
  }
  return real.string();
}

// The input that is the same file as `st` (device and inode), or "".
std::string same_as_input(const struct stat& st, const std::vector<std::string>& inputs) {
  for (const auto& in : inputs) {
    struct stat s {};
    if (stat(in.c_str(), &s) == 0 && s.st_dev == st.st_dev && s.st_ino == st.st_ino) return in;
  }
  return "";
}

// An existing file at `t.path`: what may stand in the way of replacing it.
void check_existing(const std::string& out, const OutputTarget& t, const struct stat& st, bool force,
                    const std::vector<std::string>& inputs) {
  if (S_ISDIR(st.st_mode)) throw InputError(out + ": is a directory; give a file name with -o");
  if (!S_ISREG(st.st_mode)) {
    throw InputError(out + ": " + file_kind(st.st_mode) + ", not a file; give a file name with -o");
  }
  if (const std::string in = same_as_input(st, inputs); !in.empty()) {
    throw InputError(out + ": is " + (in == out ? "one of this command's input files" : "the input file " + in) +
                     "; choose another -o");
  }
  if (being_written(t.path)) throw InputError(busy_text(out));
  if (!force) throw InputError(out + ": the file exists; use --force to overwrite it, or choose another -o");
}

}  // namespace

OutputTarget check_output(const std::string& out, bool force, const std::vector<std::string>& inputs) {
  OutputTarget t{out, false, ""};
  struct stat st {};
  if (lstat(out.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    t.path = follow(out, force);
    t.link = out;
  }
  if (stat(t.path.c_str(), &st) == 0) {
    check_existing(out, t, st, force, inputs);
    t.replace = true;
  }
  const std::string parent = directory_of(t.path);
  if (stat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw InputError(out + ": directory '" + parent + "' does not exist");
  }
  check_creatable(out, t.replace ? partial_path(t.path) : t.path);
  return t;
}

void check_default_output_dir() {
  std::error_code ec;
  fs::create_directories("results", ec);
  if (ec) throw InputError("results: cannot create the directory for result files (" + ec.message() + ")");
  check_creatable("results/", "results/x.h5");
}

std::string default_output(const std::string& config) {
  const std::string stem = fs::path(config).stem().string();
  fs::create_directories("results");
  const char* job = std::getenv("SLURM_JOB_ID");
  std::string base = "results/" + stem + (job && *job ? std::string("-job") + job : "") + "-" + compact_timestamp_now();
  std::string path = base + ".h5";
  for (int i = 2; fs::exists(path); ++i) path = base + "-" + std::to_string(i) + ".h5";
  return path;
}

std::string directory_of(const std::string& path) {
  const std::string p = fs::path(path).parent_path().string();
  return p.empty() ? "." : p;
}

std::string partial_path(const std::string& target) { return target + ".partial-" + std::to_string(getpid()); }

// A write lock on the file's bytes (fcntl, of this open file description): it keeps out another writer's and
// leaves readers be (HDF5's readers take flock(LOCK_SH), which fcntl's locks do not meet on a local file system).
// A file this process may not write gets a read lock, which keeps out writers that lock, not another such one.
TargetLock::TargetLock(const std::string& path, const std::string& out) {
  // A run that created the file and writes it still (HDF5's flock): checked first, as its lock is not of our kind.
  if (being_written(path)) throw InputError(busy_text(out));
  short type = F_WRLCK;
  fd_ = open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0 && errno == EACCES) {
    type = F_RDLCK;
    fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  }
  if (fd_ < 0) throw InputError(out + ": cannot be opened to lock it (" + std::strerror(errno) + ")");
  struct flock lock {};
  lock.l_type = type;
  lock.l_whence = SEEK_SET;  // the whole file: start 0, length 0
  if (fcntl(fd_, F_OFD_SETLK, &lock) != 0) {  // another replacing it
    ::close(fd_);
    throw InputError(busy_text(out));
  }
}

TargetLock::~TargetLock() { ::close(fd_); }

std::string settle(const std::string& written, const std::string& target, bool locked) {
  if (written == target) return "";
  if (!locked && being_written(target)) {
    return "another process is writing " + target + " now: this run's file stays " + written;
  }
  if (std::rename(written.c_str(), target.c_str()) != 0) {
    return "cannot replace " + target + " (" + std::strerror(errno) + "): this run's file stays " + written;
  }
  return "";
}

namespace {

// Creates `path` anew (O_EXCL): false when the name is taken; InputError for any other failure.
bool create_new(const std::string& path, const std::string& out) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd >= 0) return ::close(fd), true;
  if (errno == EEXIST) return false;
  throw InputError(out + ": cannot create " + path + " (" + std::strerror(errno) + ")");
}

// Moves `tmp` to `path` only where no file is (RENAME_NOREPLACE; link(2) where the file system lacks it).
int rename_new(const std::string& tmp, const std::string& path) {
  if (renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return -1;
  if (link(tmp.c_str(), path.c_str()) != 0) return -1;
  unlink(tmp.c_str());
  return 0;
}

}  // namespace

FileBeside::FileBeside(const OutputTarget& target) : target_(target) {
  const std::string out = target_.link.empty() ? target_.path : target_.link;
  if (target_.replace) lock_ = std::make_unique<TargetLock>(target_.path, out);
  const std::string base = partial_path(target_.path);
  tmp_ = base;
  for (int i = 2; !create_new(tmp_, out); ++i) tmp_ = base + "-" + std::to_string(i);
  cleanup_slot_ = register_file_to_remove(tmp_);
  out_.open(tmp_, std::ios::binary | std::ios::trunc);
  if (!out_) throw InputError(out + ": cannot write " + tmp_);
}

FileBeside::~FileBeside() {
  if (!done_) std::remove(tmp_.c_str());
  unregister_file_to_remove(cleanup_slot_);
}

void FileBeside::commit() {
  const std::string out = target_.link.empty() ? target_.path : target_.link;
  errno = 0;
  out_.close();
  int e = out_ ? 0 : (errno ? errno : EIO);
  const int fd = open(tmp_.c_str(), O_RDONLY | O_CLOEXEC);
  if (e == 0 && (fd < 0 || fsync(fd) != 0)) e = errno;
  if (fd >= 0) ::close(fd);
  if (e != 0) {
    const bool full = e == ENOSPC || e == EDQUOT;
    const std::string why = full ? no_space_text(free_bytes(directory_of(tmp_))) : std::strerror(e);
    throw InputError(out + ": cannot be written (" + why + "); nothing was replaced");
  }
  const int rc = target_.replace ? std::rename(tmp_.c_str(), target_.path.c_str()) : rename_new(tmp_, target_.path);
  if (rc != 0) {
    throw InputError(errno == EEXIST ? out + ": a file of that name appeared meanwhile; use --force to overwrite it"
                                     : out + ": cannot be moved into place (" + std::strerror(errno) + ")");
  }
  done_ = true;
}

std::string FileBeside::where() const {
  return target_.link.empty() ? target_.path : target_.link + " (a link to " + target_.path + ")";
}

}  // namespace gpuscale
