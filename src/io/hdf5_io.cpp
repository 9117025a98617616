#include "io/hdf5_io.hpp"

#include <algorithm>
#include <memory>

#include "core/error.hpp"

namespace gpuscale::h5 {

namespace {

H5Id vlen_string_type() {
  H5Id t(GPUSCALE_H5(H5Tcopy(H5T_C_S1)), H5Tclose);
  GPUSCALE_H5(H5Tset_size(t.get(), H5T_VARIABLE));
  GPUSCALE_H5(H5Tset_cset(t.get(), H5T_CSET_UTF8));
  return t;
}

H5Id scalar_space() { return H5Id(GPUSCALE_H5(H5Screate(H5S_SCALAR)), H5Sclose); }

H5Id fresh_attr(hid_t obj, const std::string& name, hid_t type) {
  if (GPUSCALE_H5(H5Aexists(obj, name.c_str())) > 0) GPUSCALE_H5(H5Adelete(obj, name.c_str()));
  H5Id space = scalar_space();
  return H5Id(GPUSCALE_H5(H5Acreate2(obj, name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT)), H5Aclose);
}

H5Id open_attr(hid_t obj, const std::string& name) {
  if (GPUSCALE_H5(H5Aexists(obj, name.c_str())) <= 0) throw RuntimeError("missing HDF5 attribute '" + name + "'");
  return H5Id(GPUSCALE_H5(H5Aopen(obj, name.c_str(), H5P_DEFAULT)), H5Aclose);
}

H5Id open_dataset(hid_t parent, const std::string& name) {
  if (!exists(parent, name)) throw RuntimeError("missing HDF5 dataset '" + name + "'");
  return H5Id(GPUSCALE_H5(H5Dopen2(parent, name.c_str(), H5P_DEFAULT)), H5Dclose);
}

hsize_t element_count(hid_t dset) {
  H5Id space(GPUSCALE_H5(H5Dget_space(dset)), H5Sclose);
  return static_cast<hsize_t>(GPUSCALE_H5(H5Sget_simple_extent_npoints(space.get())));
}

H5Id new_dataset(hid_t parent, const std::string& name, hid_t type, hsize_t rows, hsize_t cols) {
  const hsize_t dims[2] = {rows, cols};
  H5Id space(GPUSCALE_H5(H5Screate_simple(cols ? 2 : 1, dims, nullptr)), H5Sclose);
  return H5Id(GPUSCALE_H5(H5Dcreate2(parent, name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)),
              H5Dclose);
}

}  // namespace

H5Id create_group(hid_t parent, const std::string& name) {
  H5Id gcpl(GPUSCALE_H5(H5Pcreate(H5P_GROUP_CREATE)), H5Pclose);
  GPUSCALE_H5(H5Pset_attr_creation_order(gcpl.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED));
  return H5Id(GPUSCALE_H5(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT)), H5Gclose);
}

H5Id open_group(hid_t parent, const std::string& name) {
  if (!exists(parent, name)) throw RuntimeError("missing HDF5 group '" + name + "'");
  return H5Id(GPUSCALE_H5(H5Gopen2(parent, name.c_str(), H5P_DEFAULT)), H5Gclose);
}

bool exists(hid_t parent, const std::string& name) { return GPUSCALE_H5(H5Lexists(parent, name.c_str(), H5P_DEFAULT)) > 0; }

void write_attr(hid_t obj, const std::string& name, const std::string& v) {
  H5Id t = vlen_string_type();
  H5Id a = fresh_attr(obj, name, t.get());
  const char* p = v.c_str();
  GPUSCALE_H5(H5Awrite(a.get(), t.get(), &p));
}

void write_attr(hid_t obj, const std::string& name, double v) {
  H5Id a = fresh_attr(obj, name, H5T_NATIVE_DOUBLE);
  GPUSCALE_H5(H5Awrite(a.get(), H5T_NATIVE_DOUBLE, &v));
}

void write_attr(hid_t obj, const std::string& name, std::int64_t v) {
  H5Id a = fresh_attr(obj, name, H5T_NATIVE_INT64);
  GPUSCALE_H5(H5Awrite(a.get(), H5T_NATIVE_INT64, &v));
}

void write_attr(hid_t obj, const std::string& name, const Value& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return write_attr(obj, name, *i);
  if (const auto* d = std::get_if<double>(&v)) return write_attr(obj, name, *d);
  if (const auto* s = std::get_if<std::string>(&v)) return write_attr(obj, name, *s);
  // HDF5 has no boolean: stored as 0/1 and documented so.
  write_attr(obj, name, static_cast<std::int64_t>(std::get<bool>(v) ? 1 : 0));
}

bool has_attr(hid_t obj, const std::string& name) { return GPUSCALE_H5(H5Aexists(obj, name.c_str())) > 0; }

std::string read_string_attr(hid_t obj, const std::string& name) {
  H5Id a = open_attr(obj, name);
  H5Id ft(GPUSCALE_H5(H5Aget_type(a.get())), H5Tclose);
  if (H5Tget_class(ft.get()) != H5T_STRING) throw RuntimeError("HDF5 attribute '" + name + "' is not a string");
  if (GPUSCALE_H5(H5Tis_variable_str(ft.get())) > 0) {
    H5Id t = vlen_string_type();
    char* p = nullptr;
    GPUSCALE_H5(H5Aread(a.get(), t.get(), &p));
    std::string s = p ? p : "";
    H5free_memory(p);
    return s;
  }
  const std::size_t n = H5Tget_size(ft.get());
  std::string s(n, '\0');
  H5Id t(GPUSCALE_H5(H5Tcopy(H5T_C_S1)), H5Tclose);
  GPUSCALE_H5(H5Tset_size(t.get(), n));
  GPUSCALE_H5(H5Aread(a.get(), t.get(), s.data()));
  s.resize(std::min(s.find('\0'), s.size()));
  return s;
}

double read_double_attr(hid_t obj, const std::string& name) {
  H5Id a = open_attr(obj, name);
  double v = 0.0;
  GPUSCALE_H5(H5Aread(a.get(), H5T_NATIVE_DOUBLE, &v));
  return v;
}

std::int64_t read_int_attr(hid_t obj, const std::string& name) {
  H5Id a = open_attr(obj, name);
  std::int64_t v = 0;
  GPUSCALE_H5(H5Aread(a.get(), H5T_NATIVE_INT64, &v));
  return v;
}

Value read_value_attr(hid_t obj, const std::string& name) {
  H5Id a = open_attr(obj, name);
  H5Id ft(GPUSCALE_H5(H5Aget_type(a.get())), H5Tclose);
  switch (H5Tget_class(ft.get())) {
    case H5T_STRING: return read_string_attr(obj, name);
    case H5T_FLOAT: return read_double_attr(obj, name);
    case H5T_INTEGER: return read_int_attr(obj, name);
    default: throw RuntimeError("HDF5 attribute '" + name + "' has an unsupported type");
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
  std::vector<std::string> out;
  hsize_t idx = 0;
  // Creation order where the object tracks it, else by name.
  if (H5Aiterate2(obj, H5_INDEX_CRT_ORDER, H5_ITER_INC, &idx, collect_attr, &out) < 0) {
    H5Eclear2(H5E_DEFAULT);
    out.clear();
    idx = 0;
    GPUSCALE_H5(H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, &idx, collect_attr, &out));
  }
  return out;
}

std::vector<std::string> child_names(hid_t group) {
  std::vector<std::string> out;
  hsize_t idx = 0;
  GPUSCALE_H5(H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, &idx, collect_link, &out));
  return out;
}

void write_doubles(hid_t parent, const std::string& name, const std::vector<double>& v, hsize_t rows, hsize_t cols,
                   const char* unit, const std::string& description, double unit_si) {
  if (v.size() != rows * (cols ? cols : 1)) throw RuntimeError("dataset '" + name + "': size does not match its shape");
  H5Id d = new_dataset(parent, name, H5T_NATIVE_DOUBLE, rows, cols);
  GPUSCALE_H5(H5Dwrite(d.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()));
  if (unit) {
    write_attr(d.get(), "unit", std::string(unit));
    write_attr(d.get(), "unitSI", unit_si);
  }
  if (!description.empty()) write_attr(d.get(), "description", description);
}

void write_ints(hid_t parent, const std::string& name, const std::vector<std::int64_t>& v) {
  H5Id d = new_dataset(parent, name, H5T_NATIVE_INT64, v.size(), 0);
  GPUSCALE_H5(H5Dwrite(d.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()));
}

void write_strings(hid_t parent, const std::string& name, const std::vector<std::string>& v) {
  H5Id t = vlen_string_type();
  H5Id d = new_dataset(parent, name, t.get(), v.size(), 0);
  std::vector<const char*> p;
  for (const auto& s : v) p.push_back(s.c_str());
  GPUSCALE_H5(H5Dwrite(d.get(), t.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, p.data()));
}

void overwrite_doubles(hid_t parent, const std::string& name, const std::vector<double>& v) {
  H5Id d = open_dataset(parent, name);
  if (element_count(d.get()) != v.size()) throw RuntimeError("dataset '" + name + "': size does not match");
  GPUSCALE_H5(H5Dwrite(d.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()));
}

std::vector<double> read_doubles(hid_t parent, const std::string& name) {
  H5Id d = open_dataset(parent, name);
  std::vector<double> v(element_count(d.get()));
  GPUSCALE_H5(H5Dread(d.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()));
  return v;
}

std::vector<std::int64_t> read_ints(hid_t parent, const std::string& name) {
  H5Id d = open_dataset(parent, name);
  std::vector<std::int64_t> v(element_count(d.get()));
  GPUSCALE_H5(H5Dread(d.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()));
  return v;
}

std::vector<std::string> read_strings(hid_t parent, const std::string& name) {
  H5Id d = open_dataset(parent, name);
  const hsize_t n = element_count(d.get());
  H5Id t = vlen_string_type();
  std::vector<char*> p(n, nullptr);
  GPUSCALE_H5(H5Dread(d.get(), t.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, p.data()));
  std::vector<std::string> out;
  for (char* s : p) {
    out.emplace_back(s ? s : "");
    H5free_memory(s);
  }
  return out;
}

}  // namespace gpuscale::h5
