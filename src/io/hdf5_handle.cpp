#include "io/hdf5_handle.hpp"

#include <algorithm>

namespace gpuscale {

void hdf5_quiet() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

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
