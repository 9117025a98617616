// Room for a result file on its file system: what is free, and the file's
// blocks allocated before HDF5 writes into them, so that a full disk stops a
// write before it starts rather than half-way through a flush.
#pragma once

#include <cstdint>
#include <string>

#include "core/error.hpp"

namespace gpuscale {

// No room for what was to be written: the file system had `free_bytes` free.
class NoSpaceError : public RuntimeError {
 public:
  NoSpaceError(const std::string& what, std::uint64_t free_bytes) : RuntimeError(what), free_(free_bytes) {}
  std::uint64_t free_bytes() const { return free_; }

 private:
  std::uint64_t free_;
};

// Bytes an unprivileged writer may still use on the file system holding
// `path` (a file or a directory); UINT64_MAX when it cannot be told.
std::uint64_t free_bytes(const std::string& path);

// Allocates the blocks of the file open as `fd` (named `path`) up to `size`
// bytes, growing it to `size` if shorter: a write below `size` then needs no
// new space. NoSpaceError when the file system is full (or the quota
// reached), RuntimeError when the file may not grow (a file size limit).
void reserve_blocks(int fd, std::uint64_t size, const std::string& path);

// Whether HDF5's reasons for a failed write say the disk (or quota) was full.
bool says_no_space(const std::string& hdf5_reasons);

// What the system said of a failed write, from HDF5's reasons: its error
// message ("File too large"), else the first reason on one line.
std::string write_failure_text(const std::string& hdf5_reasons);

// "no space left on device (12288 bytes free)".
std::string no_space_text(std::uint64_t free_bytes);

}  // namespace gpuscale
