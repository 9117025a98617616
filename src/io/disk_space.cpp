#include "io/disk_space.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>
#include <limits>

namespace gpuscale {

std::uint64_t free_bytes(const std::string& path) {
  struct statvfs st {};
  if (statvfs(path.c_str(), &st) != 0) return std::numeric_limits<std::uint64_t>::max();
  return static_cast<std::uint64_t>(st.f_bavail) * static_cast<std::uint64_t>(st.f_frsize);
}

void reserve_blocks(int fd, std::uint64_t size, const std::string& path) {
  // posix_fallocate returns the error instead of setting errno.
  const int rc = posix_fallocate(fd, 0, static_cast<off_t>(size));
  if (rc == 0) return;
  if (rc == ENOSPC || rc == EDQUOT) {
    const std::uint64_t left = free_bytes(path);
    throw NoSpaceError(no_space_text(left), left);
  }
  // EOPNOTSUPP and the like: the file system cannot say ahead; HDF5's own write will tell.
  if (rc == EOPNOTSUPP || rc == ENOSYS || rc == EINVAL) return;
  throw RuntimeError(std::string("cannot allocate the file's space (") + std::strerror(rc) + ")");
}

bool says_no_space(const std::string& reasons) {
  return reasons.find(std::strerror(ENOSPC)) != std::string::npos ||
         reasons.find(std::strerror(EDQUOT)) != std::string::npos ||
         reasons.find("errno = 28,") != std::string::npos || reasons.find("errno = 122,") != std::string::npos;
}

std::string write_failure_text(const std::string& reasons) {
  const std::string key = "error message = '";
  if (const std::size_t at = reasons.find(key); at != std::string::npos) {
    const std::size_t from = at + key.size(), to = reasons.find('\'', from);
    if (to != std::string::npos) return reasons.substr(from, to - from);
  }
  std::string first = reasons.substr(0, reasons.find("; "));
  for (char& c : first) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return first;
}

std::string no_space_text(std::uint64_t free) {
  if (free == std::numeric_limits<std::uint64_t>::max()) return "no space left on device";
  return "no space left on device (" + std::to_string(free) + " bytes free)";
}

}  // namespace gpuscale
