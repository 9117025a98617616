#include "app/output_path.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "app/run_metadata.hpp"
#include "core/error.hpp"
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

// The file a symbolic link at `out` leads to, or InputError when it leads nowhere.
std::string follow(const std::string& out) {
  std::error_code ec;
  const fs::path real = fs::canonical(out, ec);
  if (!ec) return real.string();
  const std::string to = fs::read_symlink(out, ec).string();
  throw InputError(out + ": a symbolic link to '" + to + "', which does not exist; give a file name with -o");
}

}  // namespace

OutputTarget check_output(const std::string& out, bool force) {
  OutputTarget t{out, false};
  struct stat st {};
  if (lstat(out.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) t.path = follow(out);
  if (stat(t.path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw InputError(out + ": is a directory; give a file name with -o");
    if (!S_ISREG(st.st_mode)) {
      throw InputError(out + ": " + file_kind(st.st_mode) + ", not a file; give a file name with -o");
    }
    if (!force) throw InputError(out + ": the file exists; use --force to overwrite it, or choose another -o");
    if (being_written(t.path)) {
      throw InputError(out + ": another process is writing it (a gpuscale run still going?); wait for it to end, or "
                             "choose another -o");
    }
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

std::string settle(const std::string& written, const std::string& target) {
  if (written == target) return "";
  if (being_written(target)) {
    return "another process is writing " + target + " now: this run's file stays " + written;
  }
  if (std::rename(written.c_str(), target.c_str()) != 0) {
    return "cannot replace " + target + " (" + std::strerror(errno) + "): this run's file stays " + written;
  }
  return "";
}

FileBeside::FileBeside(std::string path) : path_(std::move(path)), tmp_(path_ + ".partial") {
  out_.open(tmp_, std::ios::binary | std::ios::trunc);
  if (!out_) throw InputError(path_ + ": cannot be written (no such folder, or no permission)");
}

FileBeside::~FileBeside() {
  if (!done_) std::remove(tmp_.c_str());
}

void FileBeside::commit() {
  out_.close();
  if (!out_) throw InputError(path_ + ": cannot be written (no room left on the device?)");
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) throw InputError(path_ + ": cannot be written (rename failed)");
  done_ = true;
}

}  // namespace gpuscale
