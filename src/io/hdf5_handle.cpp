#include "io/hdf5_handle.hpp"

#include <algorithm>
#include <cstring>

#include "core/text.hpp"

namespace gpuscale {

void hdf5_quiet() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

namespace {

// Traversal of an external link: refused, with the file it names on HDF5's error stack (its data: a flags byte,
// then the file's and the object's names, each NUL-terminated).
hid_t refuse_external(const char* name, hid_t, const void* data, std::size_t size, hid_t, hid_t) {
  const char* bytes = static_cast<const char*>(data);
  const std::string file = size > 1 ? std::string(bytes + 1, strnlen(bytes + 1, size - 1)) : std::string("?");
  H5Epush2(H5E_DEFAULT, __FILE__, __func__, __LINE__, H5E_ERR_CLS, H5E_LINK, H5E_TRAVERSE,
           "'%s' is an external link to %s, which gpuscale does not follow", name, printable(file).c_str());
  return H5I_INVALID_HID;
}

}  // namespace

void hdf5_refuse_external_links() {
  static const bool done = [] {
    static const H5L_class_t refuse{H5L_LINK_CLASS_T_VERS, H5L_TYPE_EXTERNAL, "external link (refused)", nullptr,
                                    nullptr, nullptr, refuse_external, nullptr, nullptr};
    return H5Lregister(&refuse) >= 0;
  }();
  (void)done;
}

namespace {
herr_t collect(unsigned, const H5E_error2_t* e, void* out) {
  auto* s = static_cast<std::string*>(out);
  if (e->desc && *e->desc) {
    if (!s->empty()) *s += "; ";
    *s += e->desc;
  }
  return 0;
}
}  // namespace

std::string hdf5_take_errors() {
  std::string stack;
  // Upward: the innermost frame (where the error was found) first.
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, collect, &stack);
  H5Eclear2(H5E_DEFAULT);
  return stack;
}

hid_t hdf5_check(hid_t rc, const char* call, const char* file, int line) {
  if (rc >= 0) return rc;
  const std::string reasons = hdf5_take_errors();
  // The first few reasons say what went wrong; the rest is how HDF5 got there.
  std::string brief;
  std::size_t from = 0;
  for (int n = 0; n < 3 && from < reasons.size(); ++n) {
    const std::size_t end = std::min(reasons.find("; ", from), reasons.size());
    brief += "; " + reasons.substr(from, end - from);
    from = end + 2;
  }
  throw Hdf5Error(std::string("HDF5 call ") + call + " failed (" + file + ":" + std::to_string(line) + ")" + brief,
                  reasons);
}

}  // namespace gpuscale
