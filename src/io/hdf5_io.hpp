// Typed reads and writes of HDF5 attributes and small datasets: strings are
// variable-length UTF-8 (h5py reads them as str), numbers native.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/value.hpp"
#include "io/hdf5_handle.hpp"

namespace gpuscale::h5 {

H5Id create_group(hid_t parent, const std::string& name);  // keeps attribute creation order
H5Id open_group(hid_t parent, const std::string& name);
bool exists(hid_t parent, const std::string& name);

// Replaces the attribute when it exists already.
void write_attr(hid_t obj, const std::string& name, const std::string& v);
void write_attr(hid_t obj, const std::string& name, double v);
void write_attr(hid_t obj, const std::string& name, std::int64_t v);
void write_attr(hid_t obj, const std::string& name, const Value& v);

bool has_attr(hid_t obj, const std::string& name);
std::string read_string_attr(hid_t obj, const std::string& name);
double read_double_attr(hid_t obj, const std::string& name);
std::int64_t read_int_attr(hid_t obj, const std::string& name);
Value read_value_attr(hid_t obj, const std::string& name);  // by the stored type
std::vector<std::string> attr_names(hid_t obj);              // in creation order when tracked

// Datasets of shape [rows][cols] (cols = 0: 1-D of `rows`), with optional unit
// attributes (`unit`, `unitSI`: the factor to the SI unit, e.g. 1e6 for MHz) and a description.
void write_doubles(hid_t parent, const std::string& name, const std::vector<double>& v, hsize_t rows, hsize_t cols,
                   const char* unit, const std::string& description, double unit_si = 1.0);
void write_ints(hid_t parent, const std::string& name, const std::vector<std::int64_t>& v);
void write_strings(hid_t parent, const std::string& name, const std::vector<std::string>& v);
// Overwrites the values of an existing dataset of the same size.
void overwrite_doubles(hid_t parent, const std::string& name, const std::vector<double>& v);

std::vector<double> read_doubles(hid_t parent, const std::string& name);
std::vector<std::int64_t> read_ints(hid_t parent, const std::string& name);
std::vector<std::string> read_strings(hid_t parent, const std::string& name);
std::vector<std::string> child_names(hid_t group);  // sorted by name

}  // namespace gpuscale::h5
