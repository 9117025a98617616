#include "io/hdf5_io.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <type_traits>

#include "core/hash.hpp"
#include "core/text.hpp"

namespace gpuscale::h5 {

namespace {

// Datasets of at most this many bytes keep their values in their object
// header (compact layout), under its checksum; larger ones are chunked.
constexpr std::size_t kCompactBytes = 16 * 1024;
// Bytes of one chunk of a chunked dataset; each has a Fletcher32 checksum.
constexpr std::size_t kChunkBytes = 1024 * 1024;

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// Runs `f`, turning an HDF5 failure into a ReadError about `what()`.
template <class F, class W>
auto reading(W&& what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Hdf5Error& e) {
    throw read_error(e, what());
  }
}

std::string attr_what(hid_t obj, const std::string& name) { return "attribute '" + name + "' of " + path_of(obj); }

std::string child_what(hid_t parent, const std::string& name) {
  const std::string p = path_of(parent);
  return (p == "/" ? "" : p) + "/" + name;
}

// Schema 1.7 on: each dataset's attribute `digest` binds its values to its place in the file, so that a block
// whose checksum holds but which sits where another belongs (a misdirected or duplicated write, two chunks or
// object headers swapped) reads as damage. The place is the dataset's path, as the writer created it and the
// reader opens it; the digest mixes its hash with keyed_sum's terms of the values (docs/results-format.md).
constexpr const char* kDigestAttr = "digest";

// The values' terms so far, and the digest they must come to (none: not asked for, or missing).
struct Digest {
  std::optional<std::uint64_t> stored;
  std::uint64_t seed = 0, sum = 0;
};

std::uint64_t place_seed(hid_t parent, const std::string& name) {
  const std::string place = child_what(parent, name);
  return fnv1a64(place.data(), place.size());
}

std::uint64_t digest_of(std::uint64_t seed, std::uint64_t sum) { return mix64(seed ^ sum); }

// Strings: each one's FNV-1a is its word, of its bytes up to a NUL (where a fixed-length string read back ends).
std::uint64_t string_sum(const std::vector<std::string>& v, std::uint64_t seed) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::uint64_t w = fnv1a64(v[i].data(), strnlen(v[i].data(), v[i].size()));
    sum += keyed_sum(&w, 1, i, seed);
  }
  return sum;
}

// Numbers: each one's 64 bits (a double's IEEE bit pattern, an int64's two's complement).
template <class T>
std::uint64_t number_sum(const std::vector<T>& v, std::uint64_t seed) {
  static_assert(sizeof(T) == 8, "64-bit values");
  return keyed_sum(v.data(), v.size(), 0, seed);
}

// Fixed-length UTF-8 strings of `size` bytes (at least 1), NUL-padded.
H5Id string_type(std::size_t size) {
  H5Id t(GPUSCALE_H5(H5Tcopy(H5T_C_S1)), H5Tclose);
  GPUSCALE_H5(H5Tset_size(t.get(), size));
  GPUSCALE_H5(H5Tset_strpad(t.get(), H5T_STR_NULLPAD));
  GPUSCALE_H5(H5Tset_cset(t.get(), H5T_CSET_UTF8));
  return t;
}

// Whether type `t` is a string of variable length: its values sit in a global heap, which has no checksum and on
// which the HDF5 library can loop for ever. gpuscale writes none (schema 1.4 on): a reader refuses them unread.
bool variable_length_string(hid_t t) {
  return H5Tget_class(t) == H5T_STRING && GPUSCALE_H5(H5Tis_variable_str(t)) > 0;
}

H5Id scalar_space() { return H5Id(GPUSCALE_H5(H5Screate(H5S_SCALAR)), H5Sclose); }

H5Id fresh_attr(hid_t obj, const std::string& name, hid_t type) {
  if (GPUSCALE_H5(H5Aexists(obj, name.c_str())) > 0) GPUSCALE_H5(H5Adelete(obj, name.c_str()));
  H5Id space = scalar_space();
  return H5Id(GPUSCALE_H5(H5Acreate2(obj, name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT)), H5Aclose);
}

// The number of values in a dataspace.
hsize_t points(hid_t space) { return static_cast<hsize_t>(GPUSCALE_H5(H5Sget_simple_extent_npoints(space))); }

// The attribute `name` of `obj` when it exists as one value whose type fits `fits`, to be written in place: a
// value rewritten in its object header takes no new space in the file (the run's status, written on a full disk).
template <class Fits>
H5Id attr_in_place(hid_t obj, const std::string& name, Fits&& fits) {
  if (GPUSCALE_H5(H5Aexists(obj, name.c_str())) <= 0) return {};
  H5Id a(GPUSCALE_H5(H5Aopen(obj, name.c_str(), H5P_DEFAULT)), H5Aclose);
  H5Id type(GPUSCALE_H5(H5Aget_type(a.get())), H5Tclose);
  H5Id space(GPUSCALE_H5(H5Aget_space(a.get())), H5Sclose);
  if (points(space.get()) != 1 || !fits(type.get())) return {};
  return a;
}

// Writes a number attribute: in place when it exists with the same type, else created anew.
void write_number_attr(hid_t obj, const std::string& name, hid_t type, const void* v) {
  H5Id a = attr_in_place(obj, name, [&](hid_t t) { return GPUSCALE_H5(H5Tequal(t, type)) > 0; });
  if (a.get() < 0) a = fresh_attr(obj, name, type);
  GPUSCALE_H5(H5Awrite(a.get(), type, v));
}

// Binds the values just written to `d` to their place (schema 1.7 on): in place when the digest exists.
void write_digest(hid_t d, std::uint64_t seed, std::uint64_t sum) {
  const std::uint64_t v = digest_of(seed, sum);
  write_number_attr(d, kDigestAttr, H5T_NATIVE_UINT64, &v);
}

// Opens an attribute that holds one value.
H5Id open_attr(hid_t obj, const std::string& name) {
  if (GPUSCALE_H5(H5Aexists(obj, name.c_str())) <= 0) throw ReadError(attr_what(obj, name) + " missing");
  H5Id a(GPUSCALE_H5(H5Aopen(obj, name.c_str(), H5P_DEFAULT)), H5Aclose);
  H5Id type(GPUSCALE_H5(H5Aget_type(a.get())), H5Tclose);
  if (variable_length_string(type.get())) {
    throw ReadError(attr_what(obj, name) + " is a variable-length string, which gpuscale does not write");
  }
  H5Id space(GPUSCALE_H5(H5Aget_space(a.get())), H5Sclose);
  if (points(space.get()) != 1) throw ReadError(attr_what(obj, name) + " holds " + std::to_string(points(space.get())) +
                                                " values, not one");
  return a;
}

// The digest dataset `name` of `parent` holds, to check its values against as they are read (none: not asked
// for, or noted in `digests` as missing).
Digest stored_digest(hid_t dset, hid_t parent, const std::string& name, DigestCheck* digests) {
  Digest d;
  if (!digests) return d;
  if (GPUSCALE_H5(H5Aexists(dset, kDigestAttr)) <= 0) {
    digests->note(child_what(parent, name) + " has no digest (from schema 1.7 on every dataset has one)");
    return d;
  }
  H5Id a = open_attr(dset, kDigestAttr);
  H5Id ft(GPUSCALE_H5(H5Aget_type(a.get())), H5Tclose);
  if (H5Tget_class(ft.get()) != H5T_INTEGER) throw ReadError(attr_what(dset, kDigestAttr) + " is not an integer");
  std::uint64_t v = 0;
  GPUSCALE_H5(H5Aread(a.get(), H5T_NATIVE_UINT64, &v));
  d.stored = v;
  d.seed = place_seed(parent, name);
  return d;
}

// Notes in `digests` when the values summed into `d` do not come to the digest written with them.
void check_digest(const Digest& d, DigestCheck* digests, const std::function<std::string()>& what) {
  if (d.stored && *d.stored != digest_of(d.seed, d.sum)) {
    digests->note(what() + " does not hold what was written for it (data moved, swapped or copied there from "
                           "elsewhere in the file)");
  }
}

hsize_t file_size(hid_t obj) {
  H5Id file(GPUSCALE_H5(H5Iget_file_id(obj)), H5Fclose);
  hsize_t n = 0;
  GPUSCALE_H5(H5Fget_filesize(file.get(), &n));
  return n;
}

// The number of values of a dataset about to be read into memory of `bytes`
// each: the expected `count` when given, and never more than the file holds.
std::size_t value_count(hid_t dset, std::size_t bytes, std::optional<std::size_t> count, const std::string& what) {
  H5Id space(GPUSCALE_H5(H5Dget_space(dset)), H5Sclose);
  const int rank = GPUSCALE_H5(H5Sget_simple_extent_ndims(space.get()));
  if (rank > 2) throw ReadError(what + " has " + std::to_string(rank) + " dimensions, at most 2 expected");
  const hsize_t n = points(space.get());
  if (count && n != *count) {
    throw ReadError(what + " holds " + std::to_string(n) + " values, " + std::to_string(*count) + " expected");
  }
  // Stored uncompressed: n values of a file type at least as wide as one byte each.
  H5Id type(GPUSCALE_H5(H5Dget_type(dset)), H5Tclose);
  const std::size_t stored = std::max<std::size_t>(1, H5Tget_size(type.get()));
  if (n > file_size(dset) / stored || n > std::numeric_limits<std::size_t>::max() / bytes) {
    throw ReadError(what + " claims " + std::to_string(n) + " values, more than the file can hold");
  }
  return static_cast<std::size_t>(n);
}

// A chunked dataset: every chunk is where its index says and has its checksum
// applied (otherwise HDF5 would hand back fill values, or unchecked ones).
void check_chunks(hid_t dset, const std::string& what) {
  H5Id dcpl(GPUSCALE_H5(H5Dget_create_plist(dset)), H5Pclose);
  if (H5Pget_layout(dcpl.get()) != H5D_CHUNKED) return;
  hsize_t chunk[2] = {0, 0}, dims[2] = {0, 0};
  const int rank = GPUSCALE_H5(H5Pget_chunk(dcpl.get(), 2, chunk));
  H5Id space(GPUSCALE_H5(H5Dget_space(dset)), H5Sclose);
  if (rank != GPUSCALE_H5(H5Sget_simple_extent_ndims(space.get())) || rank < 1 || rank > 2) {
    throw ReadError(what + " has chunks of another rank than its shape");
  }
  GPUSCALE_H5(H5Sget_simple_extent_dims(space.get(), dims, nullptr));
  if (chunk[0] == 0 || (rank == 2 && chunk[1] == 0)) throw ReadError(what + " has chunks of size 0");
  hsize_t at[2] = {0, 0};
  for (at[0] = 0; at[0] < dims[0]; at[0] += chunk[0]) {
    for (at[1] = 0; rank == 1 ? at[1] == 0 : at[1] < dims[1]; at[1] += rank == 1 ? 1 : chunk[1]) {
      unsigned skipped = 0;
      haddr_t addr = HADDR_UNDEF;
      hsize_t size = 0;
      GPUSCALE_H5(H5Dget_chunk_info_by_coord(dset, at, &skipped, &addr, &size));
      const std::string where = rank == 1 ? std::to_string(at[0]) : std::to_string(at[0]) + "," + std::to_string(at[1]);
      if (addr == HADDR_UNDEF) throw ReadError(what + ": the chunk at [" + where + "] is missing");
      if (skipped != 0) throw ReadError(what + ": the chunk at [" + where + "] skipped its filters (no checksum)");
      if (rank == 1) break;
    }
  }
}

// One pass over p[0..n): the sum of x * 0 over its values (0 when every one is finite; x * 0 is NaN for an
// infinite or NaN x) and the lowest and highest value, from 0 (a NaN compares false and passes over them). Two at
// a time (GCC and Clang vector extensions; the compiler does not vectorize this by itself), two lanes side by side.
struct ValueScan {
  double zero = 0, low = 0, high = 0;
};

ValueScan scan_values(const double* p, std::size_t n) {
  typedef double v2d __attribute__((vector_size(16)));
  v2d z0 = {0, 0}, z1 = z0, low0 = z0, low1 = z0, high0 = z0, high1 = z0;
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    v2d x0, x1;
    std::memcpy(&x0, p + i, sizeof x0);
    std::memcpy(&x1, p + i + 2, sizeof x1);
    z0 += x0 * 0.0;
    z1 += x1 * 0.0;
    low0 = x0 < low0 ? x0 : low0;
    low1 = x1 < low1 ? x1 : low1;
    high0 = x0 > high0 ? x0 : high0;
    high1 = x1 > high1 ? x1 : high1;
  }
  ValueScan s{z0[0] + z0[1] + z1[0] + z1[1], std::min(std::min(low0[0], low0[1]), std::min(low1[0], low1[1])),
              std::max(std::max(high0[0], high0[1]), std::max(high1[0], high1[1]))};
  for (; i < n; ++i) {
    s.zero += p[i] * 0.0;
    s.low = p[i] < s.low ? p[i] : s.low;
    s.high = p[i] > s.high ? p[i] : s.high;
  }
  return s;
}

// Whether every one of p[0..n) is finite (and >= 0 when asked).
bool all_finite(const double* p, std::size_t n, bool non_negative) {
  const ValueScan s = scan_values(p, n);
  return s.zero == 0.0 && (!non_negative || s.low >= 0.0);
}

// Whether each of p[0..n) is NaN or finite and non-negative: none below 0 (-inf among them) and none +inf.
bool all_unknown_or_non_negative(const double* p, std::size_t n) {
  const ValueScan s = scan_values(p, n);
  return s.low >= 0.0 && s.high < std::numeric_limits<double>::infinity();
}

// A ReadError for the first value of p[0..n) (the values from `first` on) that fails `check`, if any.
void check_values(const double* p, std::size_t n, Values check, std::size_t first,
                  const std::function<std::string()>& what) {
  if (check == Values::any) return;
  const bool non_negative = check != Values::finite;
  const bool unknown = check == Values::unknown_or_non_negative;  // NaN passes
  if (unknown ? all_unknown_or_non_negative(p, n) : all_finite(p, n, non_negative)) return;
  for (std::size_t i = 0; i < n; ++i) {
    if (unknown && std::isnan(p[i])) continue;
    if (!std::isfinite(p[i]) || (non_negative && p[i] < 0)) {
      throw ReadError(what() + "[" + std::to_string(first + i) + "] is " +
                      (std::isfinite(p[i]) ? "negative" : "not finite"));
    }
  }
}

// HDF5's Fletcher-32 (H5_checksum_fletcher32: big-endian 16-bit words, both
// sums folded every 360 words, uint32 arithmetic), computed four times
// faster: within a block, sum2 grows by 360 sum1 + sum over words of
// (360 - i) w_i, which lanes of running sums give without multiplying.
std::uint32_t fletcher32(const unsigned char* data, std::size_t len) {
  typedef std::uint32_t v4u __attribute__((vector_size(16)));
  std::uint32_t sum1 = 0, sum2 = 0;
  std::size_t words = len / 2;
  const auto fold = [](std::uint32_t x) { return (x & 0xffff) + (x >> 16); };
  while (words >= 360) {
    // 45 steps of 16 bytes: lane l of `even` holds word 2l of the step, of `odd` word 2l + 1.
    v4u s1e = {0, 0, 0, 0}, s1o = s1e, s2e = s1e, s2o = s1e;
    const v4u lo = {0xff, 0xff, 0xff, 0xff}, hi = {0xff00, 0xff00, 0xff00, 0xff00};
    for (int k = 0; k < 45; ++k, data += 16) {
      v4u x;
      std::memcpy(&x, data, sizeof x);                          // bytes b0 b1 b2 b3: x = b0 | b1 << 8 | ...
      const v4u even = ((x & lo) << 8) | ((x >> 8) & lo);      // b0 << 8 | b1
      const v4u odd = ((x >> 8) & hi) | ((x >> 24) & lo);      // b2 << 8 | b3
      s1e += even;
      s1o += odd;
      s2e += s1e;
      s2o += s1o;
    }
    // Word i = 8k + p of the block weighs 360 - i = 8 (45 - k) - p.
    std::uint32_t b1 = 0, b2 = 0;
    for (std::uint32_t l = 0; l < 4; ++l) {
      b1 += s1e[l] + s1o[l];
      b2 += 8 * (s2e[l] + s2o[l]) - (2 * l) * s1e[l] - (2 * l + 1) * s1o[l];
    }
    sum2 += 360 * sum1 + b2;
    sum1 += b1;
    sum1 = fold(sum1);
    sum2 = fold(sum2);
    words -= 360;
  }
  if (words > 0) {  // the last, shorter block, word by word as HDF5
    for (std::size_t i = 0; i < words; ++i, data += 2) {
      sum1 += static_cast<std::uint32_t>(data[0]) << 8 | data[1];
      sum2 += sum1;
    }
    sum1 = fold(sum1);
    sum2 = fold(sum2);
  }
  if (len % 2) {
    sum1 += static_cast<std::uint32_t>(*data) << 8;
    sum2 += sum1;
    sum1 = fold(sum1);
    sum2 = fold(sum2);
  }
  sum1 = fold(sum1);
  sum2 = fold(sum2);
  return sum2 << 16 | sum1;
}

// The common case of a large dataset as gpuscale writes it, read without
// HDF5's filter pipeline (which reads each chunk into a buffer of its own
// and copies it out): little-endian doubles, Fletcher32 the only filter,
// chunks that are contiguous runs of the row-major values (one row's
// segment, or whole rows). Each chunk is read straight into its place in
// `out` (n values), in order, and its checksum checked there at once (its
// values' digest terms summed there too, when `digest` has one); what
// a chunk holds past its run (the unused end of an edge chunk, the checksum)
// lands where the next chunk goes and is overwritten by it, or, for the
// last, in a buffer. False when the dataset is not such, or (where
// `checksums`) a checksum does not match: the caller then lets HDF5 read it
// (and judge the checksum).
bool read_chunks_direct(hid_t dset, double* out, std::size_t n, Values check,
                        const std::function<std::string()>& what, Digest& digest, bool checksums) {
  H5Id dcpl(GPUSCALE_H5(H5Dget_create_plist(dset)), H5Pclose);
  if (H5Pget_layout(dcpl.get()) != H5D_CHUNKED || GPUSCALE_H5(H5Pget_nfilters(dcpl.get())) != 1) return false;
  unsigned flags = 0;
  std::size_t nvals = 0;
  unsigned config = 0;
  if (H5Pget_filter2(dcpl.get(), 0, &flags, &nvals, nullptr, 0, nullptr, &config) != H5Z_FILTER_FLETCHER32) {
    H5Eclear2(H5E_DEFAULT);
    return false;
  }
  H5Id ft(GPUSCALE_H5(H5Dget_type(dset)), H5Tclose);
  if (GPUSCALE_H5(H5Tequal(ft.get(), H5T_IEEE_F64LE)) <= 0 ||
      GPUSCALE_H5(H5Tequal(H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE)) <= 0) {
    return false;
  }
  hsize_t chunk[2] = {0, 0}, dims[2] = {0, 0};
  const int rank = GPUSCALE_H5(H5Pget_chunk(dcpl.get(), 2, chunk));
  H5Id space(GPUSCALE_H5(H5Dget_space(dset)), H5Sclose);
  if (rank != GPUSCALE_H5(H5Sget_simple_extent_ndims(space.get()))) return false;
  GPUSCALE_H5(H5Sget_simple_extent_dims(space.get(), dims, nullptr));
  if (rank == 1) {
    dims[1] = chunk[1] = 1;
  } else if (rank != 2 || (chunk[0] != 1 && chunk[1] != dims[1])) {
    return false;
  }
  if (dims[0] * dims[1] != n || chunk[0] == 0 || chunk[1] == 0) return false;
  const std::size_t per_chunk = chunk[0] * chunk[1], stored = per_chunk * sizeof(double) + 4;
  std::vector<unsigned char> spare;
  std::uint64_t sum = 0;  // the digest's terms, added to it once every chunk read so
  hsize_t at[2] = {0, 0};
  for (at[0] = 0; at[0] < dims[0]; at[0] += chunk[0]) {
    for (at[1] = 0; at[1] < dims[1]; at[1] += chunk[1]) {
      // The chunk's run in `out`: from its first value, as many as lie inside the dataset.
      const std::size_t start = at[0] * dims[1] + at[1];
      const std::size_t valid = chunk[0] == 1 ? std::min<hsize_t>(chunk[1], dims[1] - at[1])
                                              : std::min<hsize_t>(chunk[0], dims[0] - at[0]) * dims[1];
      hsize_t size = 0;
      const hsize_t offset[2] = {at[0], rank == 1 ? 0 : at[1]};
      GPUSCALE_H5(H5Dget_chunk_storage_size(dset, offset, &size));
      if (size != stored) return false;
      const bool in_place = (start + per_chunk) * sizeof(double) + 4 <= n * sizeof(double);
      if (!in_place) spare.resize(stored);
      auto* buf = in_place ? reinterpret_cast<unsigned char*>(out + start) : spare.data();
      std::uint32_t skipped = 0;
      GPUSCALE_H5(H5Dread_chunk(dset, H5P_DEFAULT, offset, &skipped, buf));
      if (skipped != 0) return false;
      std::uint32_t want = 0;  // stored little-endian after the values
      for (int b = 3; b >= 0; --b) want = want << 8 | buf[stored - 4 + static_cast<std::size_t>(b)];
      if (checksums && fletcher32(buf, stored - 4) != want) return false;
      if (!in_place) std::memcpy(out + start, spare.data(), valid * sizeof(double));
      check_values(out + start, valid, check, start, what);
      if (digest.stored) sum += keyed_sum(out + start, valid, start, digest.seed);
    }
  }
  digest.sum += sum;
  return true;
}

// The same, where a digest was stored leaving the chunks' checksums unchecked at first: the digest, a keyed sum of
// every value, catches any change they would. Only values that fail it, or fail `check`, are read again checking
// each chunk, so that damage still reads as damage (a checksum mismatch), not as data moved or out of range.
bool read_doubles_direct(hid_t dset, double* out, std::size_t n, Values check,
                         const std::function<std::string()>& what, Digest& digest) {
  if (digest.stored) {
    Digest quick = digest;
    try {
      if (!read_chunks_direct(dset, out, n, check, what, quick, false)) return false;
      if (*quick.stored == digest_of(quick.seed, quick.sum)) {
        digest = quick;
        return true;
      }
    } catch (const ReadError&) {  // a value out of range: damage, or written so; the checked read below tells
    }
  }
  return read_chunks_direct(dset, out, n, check, what, digest, true);
}

// Dataset creation: compact when small, else chunked with a Fletcher32 checksum per chunk.
H5Id new_dataset(hid_t parent, const std::string& name, hid_t type, hsize_t rows, hsize_t cols) {
  const hsize_t dims[2] = {rows, cols};
  const int rank = cols ? 2 : 1;
  H5Id space(GPUSCALE_H5(H5Screate_simple(rank, dims, nullptr)), H5Sclose);
  H5Id dcpl(GPUSCALE_H5(H5Pcreate(H5P_DATASET_CREATE)), H5Pclose);
  const hsize_t n = rows * (cols ? cols : 1);
  const std::size_t size = H5Tget_size(type);
  if (n > 0 && n * size <= kCompactBytes) {
    GPUSCALE_H5(H5Pset_layout(dcpl.get(), H5D_COMPACT));
  } else if (n > 0) {
    const hsize_t per_chunk = std::max<hsize_t>(1, kChunkBytes / size);
    hsize_t chunk[2] = {std::min(rows, per_chunk), 0};
    if (cols) {
      chunk[1] = std::min(cols, per_chunk);
      chunk[0] = std::max<hsize_t>(1, std::min(rows, per_chunk / chunk[1]));
    }
    GPUSCALE_H5(H5Pset_chunk(dcpl.get(), rank, chunk));
    GPUSCALE_H5(H5Pset_fletcher32(dcpl.get()));
  }
  return H5Id(GPUSCALE_H5(H5Dcreate2(parent, name.c_str(), type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT)),
              H5Dclose);
}

// Strips what follows the first NUL of a fixed-length string.
std::string until_nul(const char* p, std::size_t n) { return std::string(p, strnlen(p, n)); }

// `s` when valid UTF-8; else a ReadError, or (lenient) `s` with U+FFFD for each invalid byte.
std::string checked_utf8(std::string s, bool lenient, const std::function<std::string()>& what) {
  const std::size_t ok = valid_utf8_prefix(s);
  if (ok == s.size()) return s;
  if (!lenient) throw ReadError(what() + " is not valid UTF-8 (byte " + std::to_string(ok) + ")");
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    char32_t cp = 0;
    const std::size_t n = utf8_at(s, i, &cp);
    out += n ? s.substr(i, n) : std::string("\xEF\xBF\xBD");
    i += n ? n : 1;
  }
  return out;
}

}  // namespace

ReadError read_error(const Hdf5Error& e, const std::string& what) {
  const std::string& r = e.reasons();
  if (contains(r, "Fletcher32")) return ReadError("checksum mismatch in the values of " + what);
  if (contains(r, "checksum")) return ReadError("checksum mismatch reading " + what);
  if (contains(r, "addr overflow") || contains(r, "exceeds EOA") || contains(r, "past end of allocat")) {
    return ReadError("a reference past the end of the file (reading " + what + ")");
  }
  const std::string first = r.substr(0, r.find("; "));
  return ReadError("cannot read " + what + (first.empty() ? "" : " (HDF5: " + first + ")"));
}

H5Id file_access() {
  H5Id fapl(GPUSCALE_H5(H5Pcreate(H5P_FILE_ACCESS)), H5Pclose);
  GPUSCALE_H5(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_V18));
  // No evictions: the metadata cache writes nothing until a flush, so what a flush left on disk stays whole
  // until the next one (a write that fails in between leaves it so). The cache grows instead: a case's metadata.
  H5AC_cache_config_t mdc;
  mdc.version = H5AC__CURR_CACHE_CONFIG_VERSION;
  GPUSCALE_H5(H5Pget_mdc_config(fapl.get(), &mdc));
  mdc.evictions_enabled = false;
  mdc.incr_mode = H5C_incr__off;
  mdc.flash_incr_mode = H5C_flash_incr__off;
  mdc.decr_mode = H5C_decr__off;
  GPUSCALE_H5(H5Pset_mdc_config(fapl.get(), &mdc));
  return fapl;
}

H5Id file_create() {
  H5Id fcpl(GPUSCALE_H5(H5Pcreate(H5P_FILE_CREATE)), H5Pclose);
  GPUSCALE_H5(H5Pset_attr_creation_order(fcpl.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED));
  // In the object header (checksummed as a whole) rather than a heap of their own.
  GPUSCALE_H5(H5Pset_attr_phase_change(fcpl.get(), 65535, 65535));
  return fcpl;
}

H5Id create_group(hid_t parent, const std::string& name, bool member_order) {
  H5Id gcpl(GPUSCALE_H5(H5Pcreate(H5P_GROUP_CREATE)), H5Pclose);
  GPUSCALE_H5(H5Pset_attr_creation_order(gcpl.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED));
  GPUSCALE_H5(H5Pset_attr_phase_change(gcpl.get(), 65535, 65535));
  // Links too: in the object header, not in a heap and B-trees of their own (a group of more than 8 members, e.g.
  // a table of 12 columns, would otherwise hold bytes that only some reads touch, so that damage there went unseen).
  GPUSCALE_H5(H5Pset_link_phase_change(gcpl.get(), 65535, 65535));
  if (member_order) {
    GPUSCALE_H5(H5Pset_link_creation_order(gcpl.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED));
  }
  return H5Id(GPUSCALE_H5(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT)), H5Gclose);
}

H5Id open_group(hid_t parent, const std::string& name) {
  return reading([&] { return child_what(parent, name); },
                 [&] {
                   if (!exists(parent, name)) throw ReadError(child_what(parent, name) + " missing");
                   H5Id g(GPUSCALE_H5(H5Oopen(parent, name.c_str(), H5P_DEFAULT)), H5Oclose);
                   if (H5Iget_type(g.get()) != H5I_GROUP) throw ReadError(child_what(parent, name) + " is not a group");
                   return g;
                 });
}

H5Id open_dataset(hid_t parent, const std::string& name) {
  return reading([&] { return child_what(parent, name); },
                 [&] {
                   if (!exists(parent, name)) throw ReadError(child_what(parent, name) + " missing");
                   H5Id d(GPUSCALE_H5(H5Oopen(parent, name.c_str(), H5P_DEFAULT)), H5Oclose);
                   if (H5Iget_type(d.get()) != H5I_DATASET) {
                     throw ReadError(child_what(parent, name) + " is not a dataset");
                   }
                   return d;
                 });
}

bool is_group(hid_t parent, const std::string& name) {
  return reading([&] { return child_what(parent, name); }, [&] {
    H5Id o(GPUSCALE_H5(H5Oopen(parent, name.c_str(), H5P_DEFAULT)), H5Oclose);
    return H5Iget_type(o.get()) == H5I_GROUP;
  });
}

H5T_class_t value_class(hid_t parent, const std::string& name) {
  return reading([&] { return child_what(parent, name); }, [&] {
    H5Id d = open_dataset(parent, name);
    H5Id ft(GPUSCALE_H5(H5Dget_type(d.get())), H5Tclose);
    return H5Tget_class(ft.get());
  });
}

bool exists(hid_t parent, const std::string& name) {
  return reading([&] { return child_what(parent, name); },
                 [&] { return GPUSCALE_H5(H5Lexists(parent, name.c_str(), H5P_DEFAULT)) > 0; });
}

void write_attr(hid_t obj, const std::string& name, const std::string& value, std::size_t room) {
  // Fixed-length: no global heap (which has no checksum), the value inside the attribute, NUL-padded.
  const std::string v = utf8_escaped(value);
  H5Id a = attr_in_place(obj, name, [&](hid_t t) {
    return H5Tget_class(t) == H5T_STRING && GPUSCALE_H5(H5Tis_variable_str(t)) == 0 && H5Tget_size(t) >= v.size();
  });
  std::size_t size = 0;
  if (a.get() >= 0) {
    H5Id t(GPUSCALE_H5(H5Aget_type(a.get())), H5Tclose);
    size = H5Tget_size(t.get());
  } else {
    size = std::max<std::size_t>({1, v.size(), room});
    H5Id t = string_type(size);
    a = fresh_attr(obj, name, t.get());
  }
  H5Id t = string_type(size);
  std::string padded = v;
  padded.resize(size, '\0');
  GPUSCALE_H5(H5Awrite(a.get(), t.get(), padded.data()));
}

void write_attr(hid_t obj, const std::string& name, double v) { write_number_attr(obj, name, H5T_NATIVE_DOUBLE, &v); }

void write_attr(hid_t obj, const std::string& name, std::int64_t v) {
  write_number_attr(obj, name, H5T_NATIVE_INT64, &v);
}

void write_attr(hid_t obj, const std::string& name, const Value& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return write_attr(obj, name, *i);
  if (const auto* d = std::get_if<double>(&v)) return write_attr(obj, name, *d);
  if (const auto* s = std::get_if<std::string>(&v)) return write_attr(obj, name, *s);
  // HDF5 has no boolean: stored as 0/1 and documented so.
  write_attr(obj, name, static_cast<std::int64_t>(std::get<bool>(v) ? 1 : 0));
}

bool has_attr(hid_t obj, const std::string& name) {
  return reading([&] { return attr_what(obj, name); },
                 [&] { return GPUSCALE_H5(H5Aexists(obj, name.c_str())) > 0; });
}

bool variable_length_string_attr(hid_t obj, const std::string& name) {
  return reading([&] { return attr_what(obj, name); }, [&] {
    H5Id a(GPUSCALE_H5(H5Aopen(obj, name.c_str(), H5P_DEFAULT)), H5Aclose);
    H5Id type(GPUSCALE_H5(H5Aget_type(a.get())), H5Tclose);
    return variable_length_string(type.get());
  });
}

namespace {
std::string read_raw_string_attr(hid_t obj, const std::string& name);
}  // namespace

std::string read_string_attr(hid_t obj, const std::string& name, bool lenient) {
  const auto what = [&] { return attr_what(obj, name); };
  return checked_utf8(read_raw_string_attr(obj, name), lenient, what);
}

namespace {
std::string read_raw_string_attr(hid_t obj, const std::string& name) {
  return reading([&] { return attr_what(obj, name); }, [&] {
    H5Id a = open_attr(obj, name);
    H5Id ft(GPUSCALE_H5(H5Aget_type(a.get())), H5Tclose);
    if (H5Tget_class(ft.get()) != H5T_STRING) throw ReadError(attr_what(obj, name) + " is not a string");
    const std::size_t n = H5Tget_size(ft.get());
    if (n == 0 || n > file_size(a.get())) throw ReadError(attr_what(obj, name) + " has an impossible size");
    std::string s(n, '\0');
    H5Id t(GPUSCALE_H5(H5Tcopy(ft.get())), H5Tclose);  // as stored: no conversion
    GPUSCALE_H5(H5Aread(a.get(), t.get(), s.data()));
    return until_nul(s.data(), n);
  });
}
}  // namespace

double read_double_attr(hid_t obj, const std::string& name) {
  return reading([&] { return attr_what(obj, name); }, [&] {
    H5Id a = open_attr(obj, name);
    H5Id ft(GPUSCALE_H5(H5Aget_type(a.get())), H5Tclose);
    const H5T_class_t cls = H5Tget_class(ft.get());
    if (cls != H5T_FLOAT && cls != H5T_INTEGER) throw ReadError(attr_what(obj, name) + " is not a number");
    double v = 0.0;
    GPUSCALE_H5(H5Aread(a.get(), H5T_NATIVE_DOUBLE, &v));
    return v;
  });
}

std::int64_t read_int_attr(hid_t obj, const std::string& name) {
  return reading([&] { return attr_what(obj, name); }, [&] {
    H5Id a = open_attr(obj, name);
    H5Id ft(GPUSCALE_H5(H5Aget_type(a.get())), H5Tclose);
    if (H5Tget_class(ft.get()) != H5T_INTEGER) throw ReadError(attr_what(obj, name) + " is not an integer");
    std::int64_t v = 0;
    GPUSCALE_H5(H5Aread(a.get(), H5T_NATIVE_INT64, &v));
    return v;
  });
}

Value read_value_attr(hid_t obj, const std::string& name) {
  const H5T_class_t cls = reading([&] { return attr_what(obj, name); }, [&] {
    H5Id a = open_attr(obj, name);
    H5Id ft(GPUSCALE_H5(H5Aget_type(a.get())), H5Tclose);
    return H5Tget_class(ft.get());
  });
  switch (cls) {
    case H5T_STRING: return read_string_attr(obj, name);
    case H5T_FLOAT: return read_double_attr(obj, name);
    case H5T_INTEGER: return read_int_attr(obj, name);
    default: throw ReadError(attr_what(obj, name) + " has an unsupported type");
  }
}

namespace {
herr_t collect_attr(hid_t, const char* name, const H5A_info_t*, void* out) {
  static_cast<std::vector<std::string>*>(out)->emplace_back(name);
  return 0;
}
herr_t collect_link(hid_t, const char* name, const H5L_info_t*, void* out) {
  static_cast<std::vector<std::string>*>(out)->emplace_back(name);
  return 0;
}
}  // namespace

std::vector<std::string> attr_names(hid_t obj) {
  return reading([&] { return "the attributes of " + path_of(obj); }, [&] {
    std::vector<std::string> out;
    hsize_t idx = 0;
    // Creation order where the object tracks it, else by name.
    unsigned order = 0;
    const H5I_type_t type = H5Iget_type(obj);
    if (type == H5I_GROUP || type == H5I_FILE || type == H5I_DATASET) {
      H5Id ocpl(GPUSCALE_H5(type == H5I_GROUP  ? H5Gget_create_plist(obj)
                            : type == H5I_FILE ? H5Fget_create_plist(obj)
                                               : H5Dget_create_plist(obj)),
                H5Pclose);
      GPUSCALE_H5(H5Pget_attr_creation_order(ocpl.get(), &order));
    }
    const H5_index_t by = (order & H5P_CRT_ORDER_TRACKED) ? H5_INDEX_CRT_ORDER : H5_INDEX_NAME;
    GPUSCALE_H5(H5Aiterate2(obj, by, H5_ITER_INC, &idx, collect_attr, &out));
    return out;
  });
}

std::vector<std::string> child_names(hid_t group) {
  return reading([&] { return "the members of " + path_of(group); }, [&] {
    std::vector<std::string> out;
    hsize_t idx = 0;
    GPUSCALE_H5(H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, &idx, collect_link, &out));
    return out;
  });
}

std::vector<std::string> members_in_order(hid_t group) {
  return reading([&] { return "the members of " + path_of(group); }, [&] {
    H5Id gcpl(GPUSCALE_H5(H5Gget_create_plist(group)), H5Pclose);
    unsigned order = 0;
    GPUSCALE_H5(H5Pget_link_creation_order(gcpl.get(), &order));
    const H5_index_t by = (order & H5P_CRT_ORDER_INDEXED) ? H5_INDEX_CRT_ORDER : H5_INDEX_NAME;
    std::vector<std::string> out;
    hsize_t idx = 0;
    GPUSCALE_H5(H5Literate(group, by, H5_ITER_INC, &idx, collect_link, &out));
    return out;
  });
}

void write_doubles(hid_t parent, const std::string& name, const std::vector<double>& v, hsize_t rows, hsize_t cols,
                   const char* unit, const std::string& description, double unit_si) {
  if (v.size() != rows * (cols ? cols : 1)) throw RuntimeError("dataset '" + name + "': size does not match its shape");
  H5Id d = new_dataset(parent, name, H5T_NATIVE_DOUBLE, rows, cols);
  GPUSCALE_H5(H5Dwrite(d.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()));
  const std::uint64_t seed = place_seed(parent, name);
  write_digest(d.get(), seed, number_sum(v, seed));
  if (unit) {
    write_attr(d.get(), "unit", std::string(unit));
    write_attr(d.get(), "unitSI", unit_si);
  }
  if (!description.empty()) write_attr(d.get(), "description", description);
  GPUSCALE_H5(H5Dclose(d.release()));  // a chunk still cached is written now: a failure here is a failed write
}

void write_ints(hid_t parent, const std::string& name, const std::vector<std::int64_t>& v) {
  H5Id d = new_dataset(parent, name, H5T_NATIVE_INT64, v.size(), 0);
  GPUSCALE_H5(H5Dwrite(d.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()));
  const std::uint64_t seed = place_seed(parent, name);
  write_digest(d.get(), seed, number_sum(v, seed));
  GPUSCALE_H5(H5Dclose(d.release()));
}

void write_strings(hid_t parent, const std::string& name, const std::vector<std::string>& values) {
  std::vector<std::string> v;
  for (const auto& s : values) v.push_back(utf8_escaped(s));
  std::size_t width = 1;
  for (const auto& s : v) width = std::max(width, s.size());
  H5Id t = string_type(width);
  H5Id d = new_dataset(parent, name, t.get(), v.size(), 0);
  std::string buf(width * v.size(), '\0');
  for (std::size_t i = 0; i < v.size(); ++i) std::memcpy(&buf[i * width], v[i].data(), v[i].size());
  GPUSCALE_H5(H5Dwrite(d.get(), t.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()));
  const std::uint64_t seed = place_seed(parent, name);
  write_digest(d.get(), seed, string_sum(v, seed));
  GPUSCALE_H5(H5Dclose(d.release()));
}

namespace {
// New values for an existing dataset of as many, and its digest with them (written in place: no new space).
template <class T>
void overwrite_numbers(hid_t parent, const std::string& name, const std::vector<T>& v, hid_t mem) {
  H5Id d = open_dataset(parent, name);
  H5Id space(GPUSCALE_H5(H5Dget_space(d.get())), H5Sclose);
  if (points(space.get()) != v.size()) throw RuntimeError("dataset '" + name + "': size does not match");
  GPUSCALE_H5(H5Dwrite(d.get(), mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()));
  const std::uint64_t seed = place_seed(parent, name);
  write_digest(d.get(), seed, number_sum(v, seed));
  GPUSCALE_H5(H5Dclose(d.release()));
}
}  // namespace

void overwrite_doubles(hid_t parent, const std::string& name, const std::vector<double>& v) {
  overwrite_numbers(parent, name, v, H5T_NATIVE_DOUBLE);
}

void overwrite_ints(hid_t parent, const std::string& name, const std::vector<std::int64_t>& v) {
  overwrite_numbers(parent, name, v, H5T_NATIVE_INT64);
}

std::vector<hsize_t> shape(hid_t parent, const std::string& name) {
  return reading([&] { return child_what(parent, name); }, [&] {
    H5Id d = open_dataset(parent, name);
    H5Id space(GPUSCALE_H5(H5Dget_space(d.get())), H5Sclose);
    const int rank = GPUSCALE_H5(H5Sget_simple_extent_ndims(space.get()));
    if (rank > 2) throw ReadError(child_what(parent, name) + " has " + std::to_string(rank) + " dimensions");
    std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
    GPUSCALE_H5(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr));
    return dims;
  });
}

namespace {
// Reads into `v`, resized to the dataset's values (memory it already has is reused, not cleared first).
template <class T>
void read_numbers(hid_t parent, const std::string& name, std::optional<std::size_t> count, hid_t mem,
                  H5T_class_t want, std::vector<T>& v, Values check, DigestCheck* digests) {
  const std::function<std::string()> what = [&] { return child_what(parent, name); };
  reading(what, [&] {
    H5Id d = open_dataset(parent, name);
    {
      H5Id ft(GPUSCALE_H5(H5Dget_type(d.get())), H5Tclose);
      const H5T_class_t cls = H5Tget_class(ft.get());
      if (cls != want && !(want == H5T_FLOAT && cls == H5T_INTEGER)) {
        throw ReadError(what() + (want == H5T_FLOAT ? " is not numbers" : " is not integers"));
      }
    }
    const std::size_t n = value_count(d.get(), sizeof(T), count, what());
    check_chunks(d.get(), what());
    Digest digest = stored_digest(d.get(), parent, name, digests);
    v.resize(n);
    if constexpr (std::is_same_v<T, double>) {
      if (n && read_doubles_direct(d.get(), v.data(), n, check, what, digest)) {
        return check_digest(digest, digests, what);
      }
    }
    if (n) GPUSCALE_H5(H5Dread(d.get(), mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()));
    if constexpr (std::is_same_v<T, double>) check_values(v.data(), n, check, 0, what);
    if (digest.stored) digest.sum = number_sum(v, digest.seed);
    check_digest(digest, digests, what);
  });
}
}  // namespace

std::vector<double> read_doubles(hid_t parent, const std::string& name, std::optional<std::size_t> count,
                                 DigestCheck* digests) {
  std::vector<double> v;
  read_numbers<double>(parent, name, count, H5T_NATIVE_DOUBLE, H5T_FLOAT, v, Values::any, digests);
  return v;
}

void read_doubles_into(hid_t parent, const std::string& name, std::size_t count, std::vector<double>& out,
                       Values check, DigestCheck* digests) {
  read_numbers<double>(parent, name, count, H5T_NATIVE_DOUBLE, H5T_FLOAT, out, check, digests);
}

std::vector<std::int64_t> read_ints(hid_t parent, const std::string& name, std::optional<std::size_t> count,
                                    DigestCheck* digests) {
  std::vector<std::int64_t> v;
  read_numbers<std::int64_t>(parent, name, count, H5T_NATIVE_INT64, H5T_INTEGER, v, Values::any, digests);
  return v;
}

namespace {
// `v`, the strings of dataset `name`, once they come to its digest (if it has one).
std::vector<std::string> checked_strings(std::vector<std::string> v, hid_t dset, hid_t parent, const std::string& name,
                                         DigestCheck* digests, const std::function<std::string()>& what) {
  Digest digest = stored_digest(dset, parent, name, digests);
  if (digest.stored) digest.sum = string_sum(v, digest.seed);
  check_digest(digest, digests, what);
  return v;
}
}  // namespace

std::vector<std::string> read_strings(hid_t parent, const std::string& name, std::optional<std::size_t> count,
                                      DigestCheck* digests) {
  const auto what = [&] { return child_what(parent, name); };
  return reading(what, [&] {
    H5Id d = open_dataset(parent, name);
    H5Id ft(GPUSCALE_H5(H5Dget_type(d.get())), H5Tclose);
    if (H5Tget_class(ft.get()) != H5T_STRING) throw ReadError(what() + " is not strings");
    std::vector<std::string> out;
    if (variable_length_string(ft.get())) throw ReadError(what() + " holds variable-length strings, which gpuscale "
                                                            "does not write");
    const std::size_t width = H5Tget_size(ft.get());
    if (width == 0) throw ReadError(what() + " has strings of size 0");
    const std::size_t n = value_count(d.get(), width, count, what());
    check_chunks(d.get(), what());
    std::string buf(n * width, '\0');
    H5Id t(GPUSCALE_H5(H5Tcopy(ft.get())), H5Tclose);  // as stored: no conversion
    if (n) GPUSCALE_H5(H5Dread(d.get(), t.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()));
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) out.push_back(checked_utf8(until_nul(&buf[i * width], width), false, what));
    return checked_strings(std::move(out), d.get(), parent, name, digests, what);
  });
}

std::size_t valid_utf8_prefix(const std::string& s) {
  char32_t cp = 0;
  std::size_t i = 0;
  for (std::size_t n; i < s.size() && (n = utf8_at(s, i, &cp)) > 0;) i += n;
  return i;
}

std::string path_of(hid_t obj) {
  const ssize_t n = H5Iget_name(obj, nullptr, 0);
  if (n <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return "?";
  }
  std::string s(static_cast<std::size_t>(n) + 1, '\0');
  if (H5Iget_name(obj, s.data(), s.size()) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return "?";
  }
  s.resize(static_cast<std::size_t>(n));
  return s;
}

}  // namespace gpuscale::h5
