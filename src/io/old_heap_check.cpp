// Finds global heap collections by their signature and replays the HDF5 library's walk over each, so that a
// damaged one is reported instead of read (HDF5 1.10.8, src/H5HGcache.c, H5HG__cache_heap_deserialize).
#include "io/old_heap_check.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace gpuscale {

namespace {

// "GCOL", version 1, three reserved bytes: what the library writes (it checks the first five only, but text in a
// string cannot hold bytes 1 and 0, nor can the samples of a real file plausibly hold all eight).
constexpr unsigned char kSignature[8] = {'G', 'C', 'O', 'L', 1, 0, 0, 0};
constexpr unsigned char kSuperblock[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
constexpr std::size_t kBlock = 1 << 20;
// The smallest collection the library writes (H5HG_MINSIZE).
constexpr std::uint64_t kMinHeapCollection = 4096;

std::uint64_t align8(std::uint64_t x) { return (x + 7) / 8 * 8; }

std::uint64_t little_endian(const unsigned char* p, unsigned n) {
  std::uint64_t v = 0;
  for (unsigned i = n; i > 0; --i) v = v << 8 | p[i - 1];
  return v;
}

std::string byte(std::uint64_t at) { return "byte " + std::to_string(at); }

class File {
 public:
  explicit File(const std::string& path) : fd_(open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    struct stat st {};
    if (fd_ >= 0 && fstat(fd_, &st) == 0) size_ = static_cast<std::uint64_t>(st.st_size);
  }
  ~File() {
    if (fd_ >= 0) close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  bool ok() const { return fd_ >= 0; }
  std::uint64_t size() const { return size_; }
  // Bytes [at, at + n) clipped to the file; fewer on a read error.
  std::vector<unsigned char> read(std::uint64_t at, std::uint64_t n) const {
    std::vector<unsigned char> b(static_cast<std::size_t>(at < size_ ? std::min(n, size_ - at) : 0));
    std::size_t got = 0;
    while (got < b.size()) {
      const ssize_t r = pread(fd_, b.data() + got, b.size() - got, static_cast<off_t>(at + got));
      if (r <= 0) break;
      got += static_cast<std::size_t>(r);
    }
    b.resize(got);
    return b;
  }

 private:
  int fd_;
  std::uint64_t size_ = 0;
};

// The file's size of lengths when its superblock is of version 0 or 1 (no checksums), else 0. The superblock is
// where the library looks for it: at byte 0, 512, 1024, 2048, ...
unsigned old_format_length_size(const File& f) {
  for (std::uint64_t at = 0; at + 16 <= f.size(); at = at == 0 ? 512 : at * 2) {
    const auto b = f.read(at, 16);
    if (b.size() < 16 || std::memcmp(b.data(), kSuperblock, 8) != 0) continue;
    const unsigned length_size = b[14];
    const bool old = b[8] <= 1 && (length_size == 2 || length_size == 4 || length_size == 8);
    return old ? length_size : 0;
  }
  return 0;
}

// The walk of the library's H5HG__cache_heap_deserialize over one collection: `c` holds its `n` bytes (the size its
// header gives), which start at byte `at` of the file. What would make the library loop (an object of size 0, which
// does not move the walk on) or read past the collection; nothing when every object lies inside it.
std::optional<std::string> collection_damage(const unsigned char* c, std::size_t n, unsigned length_size,
                                             std::uint64_t at) {
  const std::uint64_t obj_header = align8(8 + length_size);
  const auto object = [&](std::uint64_t p) { return "global heap at " + byte(at) + ": the object at " + byte(at + p); };
  // From the end of the collection's header, object by object; an object's header gives its index (0: free space,
  // whose size counts its header) and the size of its data.
  for (std::uint64_t p = align8(8 + length_size); p < n;) {
    const std::uint64_t left = n - p;
    if (left < obj_header) break;  // too short for an object: the library takes it as free space
    const unsigned idx = static_cast<unsigned>(little_endian(c + p, 2));
    const std::uint64_t size = little_endian(c + p + 8, length_size);
    if (idx == 0 && size == 0) return object(p) + " has size 0";
    if (idx == 0 ? size > left : size > left - obj_header || obj_header + align8(size) > left) {
      return object(p) + " (" + std::to_string(size) + " bytes) runs past its end (" + byte(at + n) + ")";
    }
    p += idx == 0 ? size : obj_header + align8(size);
  }
  return std::nullopt;
}

// Checks the collection whose signature is at `at`; sets `end` to where the search goes on (past it).
std::optional<std::string> check_collection(const File& f, std::uint64_t at, unsigned length_size,
                                            std::uint64_t& end) {
  const std::string where = "global heap at " + byte(at) + ": ";
  const auto head = f.read(at, 8 + length_size);
  if (head.size() < 8 + length_size) return std::nullopt;  // the library cannot read it either
  const std::uint64_t size = little_endian(head.data() + 8, length_size);
  if (size < kMinHeapCollection) return where + "size " + std::to_string(size) + ", below the smallest (4096)";
  if (size > f.size() - at) {
    return where + std::to_string(size) + " bytes, past the end of the file (" + std::to_string(f.size()) +
           " bytes)";
  }
  end = at + size;
  const auto c = f.read(at, size);
  if (c.size() < size) return std::nullopt;  // nor this
  return collection_damage(c.data(), c.size(), length_size, at);
}

// The offset of the first signature in b[0..n), or n.
std::size_t find_signature(const unsigned char* b, std::size_t n) {
  const unsigned char* end = b + n;
  const unsigned char* hit = std::search(b, end, kSignature, kSignature + sizeof kSignature);
  return static_cast<std::size_t>(hit - b);
}

}  // namespace

std::optional<std::string> old_heap_damage(const std::string& path) {
  const File f(path);
  if (!f.ok()) return std::nullopt;
  const unsigned length_size = old_format_length_size(f);
  if (length_size == 0) return std::nullopt;
  for (std::uint64_t at = 0; at + sizeof kSignature <= f.size();) {
    const auto b = f.read(at, kBlock);
    const std::size_t k = find_signature(b.data(), b.size());
    if (k == b.size()) {  // none here; one may straddle the block's end
      if (b.size() < kBlock) break;
      at += b.size() - (sizeof kSignature - 1);
      continue;
    }
    std::uint64_t end = at + k + 1;
    if (auto damage = check_collection(f, at + k, length_size, end)) return damage;
    at = end;
  }
  return std::nullopt;
}

}  // namespace gpuscale
