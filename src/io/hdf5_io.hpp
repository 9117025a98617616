// Typed reads and writes of HDF5 attributes and datasets.
//
// Written (schema 1.4 on): strings fixed-length UTF-8, numbers native; every
// object header carries a checksum (file format of HDF5 1.8: create the file
// with file_access()); a dataset's values sit in its checksummed object header
// when small (compact layout), else in chunks with a Fletcher32 checksum each.
// Schema 1.7 on, each dataset also carries the attribute `digest`, which binds
// its values to its path: a chunk or header that checksums whole but sits where
// another belongs (moved, swapped, copied) no longer reads as whole.
//
// Read: any file, older ones too (variable-length strings, contiguous
// datasets). Every failure while reading is a ReadError that says what was
// found in the file's own terms (checksum mismatch in /cases/0003/wall_end,
// attribute 'reps' of /cases/0003 missing, ...), never an HDF5 call or a
// source path; nothing is allocated for more values than the file can hold.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/value.hpp"
#include "io/hdf5_handle.hpp"

namespace gpuscale::h5 {

// A file that does not hold what it should, said in terms of its objects.
class ReadError : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
};

// A ReadError for an HDF5 failure while reading `what` (an object's path, an
// attribute of one): a checksum mismatch, a truncation, or HDF5's reason.
ReadError read_error(const Hdf5Error& e, const std::string& what);

// The file access properties gpuscale writes with: the HDF5 1.8 file format
// (superblock 2, object headers 2: every piece of metadata with a checksum),
// and a metadata cache that writes to the file only when it is flushed.
H5Id file_access();
// The file creation properties: attribute creation order kept, attributes
// inside the (checksummed) object header.
H5Id file_create();

// Keeps attribute creation order; `member_order`: its members' too (a table's columns read back as written).
H5Id create_group(hid_t parent, const std::string& name, bool member_order = false);
H5Id open_group(hid_t parent, const std::string& name);
H5Id open_dataset(hid_t parent, const std::string& name);  // for its attributes
bool exists(hid_t parent, const std::string& name);
bool is_group(hid_t parent, const std::string& name);
// The class of a dataset's values: H5T_INTEGER, H5T_FLOAT, H5T_STRING, ...
H5T_class_t value_class(hid_t parent, const std::string& name);

// Writes the attribute, in place when it exists already and the value fits its type (a string no longer
// than its size: NUL-padded), else replacing it. A string is made valid UTF-8 (an invalid byte becomes the
// text \xNN); `room`: the size of a string attribute created now, at least the value's (space for the
// longer values to come, written in place).
void write_attr(hid_t obj, const std::string& name, const std::string& v, std::size_t room = 0);
void write_attr(hid_t obj, const std::string& name, double v);
void write_attr(hid_t obj, const std::string& name, std::int64_t v);
void write_attr(hid_t obj, const std::string& name, const Value& v);

bool has_attr(hid_t obj, const std::string& name);
// Whether attribute `name` of `obj` (which exists) is a variable-length string, which gpuscale never writes; its
// value is not read.
bool variable_length_string_attr(hid_t obj, const std::string& name);
// Each reads one value (a scalar attribute or one of one element). Strings
// must be valid UTF-8 (as written); `lenient`: invalid bytes become U+FFFD
// instead (free text such as a command line, which need not be UTF-8).
std::string read_string_attr(hid_t obj, const std::string& name, bool lenient = false);
double read_double_attr(hid_t obj, const std::string& name);
std::int64_t read_int_attr(hid_t obj, const std::string& name);
Value read_value_attr(hid_t obj, const std::string& name);  // by the stored type
std::vector<std::string> attr_names(hid_t obj);              // in creation order when tracked

// Datasets of shape [rows][cols] (cols = 0: 1-D of `rows`), with optional unit
// attributes (`unit`, `unitSI`: the factor to the SI unit, e.g. 1e6 for MHz) and a description.
void write_doubles(hid_t parent, const std::string& name, const std::vector<double>& v, hsize_t rows, hsize_t cols,
                   const char* unit, const std::string& description, double unit_si = 1.0);
void write_ints(hid_t parent, const std::string& name, const std::vector<std::int64_t>& v);
// Strings made valid UTF-8 as write_attr makes them.
void write_strings(hid_t parent, const std::string& name, const std::vector<std::string>& v);
// Each write above stores the dataset's digest with its values.
// Overwrites the values of an existing dataset of the same size, and its digest.
void overwrite_doubles(hid_t parent, const std::string& name, const std::vector<double>& v);
void overwrite_ints(hid_t parent, const std::string& name, const std::vector<std::int64_t>& v);

// The dataset's dimensions (at most 2).
std::vector<hsize_t> shape(hid_t parent, const std::string& name);
// The digests of the datasets a reader reads (schema 1.7 on). Each read below given one sums the
// values' terms as it reads them and notes a dataset that has no digest, or whose values do not
// come to it; check() then throws a ReadError for the first noted: "<path> does not hold what was
// written for it (...)". Checked last, so that a value out of range is named as such first.
class DigestCheck {
 public:
  void note(std::string what) {
    if (first_.empty()) first_ = std::move(what);
  }
  void check() const {
    if (!first_.empty()) throw ReadError(first_);
  }

 private:
  std::string first_;
};

// All values; with `count`, a ReadError unless the dataset holds exactly that many. `digests`: see DigestCheck
// (none: the digest is not read).
std::vector<double> read_doubles(hid_t parent, const std::string& name, std::optional<std::size_t> count = {},
                                 DigestCheck* digests = nullptr);
// What read_doubles_into checks of each value (a ReadError naming the first that fails).
// unknown_or_non_negative: NaN (not known) or a finite value of at least 0.
enum class Values { any, finite, finite_non_negative, unknown_or_non_negative };

// The same into `out` (exactly `count` values), reusing its memory (no
// allocation when it has the room), each value checked as `check` says
// while it is fresh in the cache.
void read_doubles_into(hid_t parent, const std::string& name, std::size_t count, std::vector<double>& out,
                       Values check = Values::any, DigestCheck* digests = nullptr);
std::vector<std::int64_t> read_ints(hid_t parent, const std::string& name, std::optional<std::size_t> count = {},
                                    DigestCheck* digests = nullptr);
// Strings: valid UTF-8 each, as read_string_attr.
std::vector<std::string> read_strings(hid_t parent, const std::string& name, std::optional<std::size_t> count = {},
                                      DigestCheck* digests = nullptr);
std::vector<std::string> child_names(hid_t group);  // sorted by name
// In creation order where the group tracks it (create_group's member_order), else sorted by name.
std::vector<std::string> members_in_order(hid_t group);

// The length of the longest prefix of `s` that is valid UTF-8 (s.size(): all of it).
std::size_t valid_utf8_prefix(const std::string& s);

// The path of an object in its file ("/cases/0003"), for messages.
std::string path_of(hid_t obj);

}  // namespace gpuscale::h5
