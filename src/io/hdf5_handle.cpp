#include "io/hdf5_handle.hpp"

#include "core/error.hpp"

namespace gpuscale {

void hdf5_quiet() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

namespace {
herr_t collect(unsigned n, const H5E_error2_t* e, void* out) {
  auto* s = static_cast<std::string*>(out);
  if (n < 3 && e->desc) {  // the innermost few frames say what went wrong
    *s += "; ";
    *s += e->desc;
  }
  return 0;
}

[[noreturn]] void fail(const char* call, const char* file, int line) {
  std::string stack;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect, &stack);
  H5Eclear2(H5E_DEFAULT);
  throw RuntimeError(std::string("HDF5 call ") + call + " failed (" + file + ":" + std::to_string(line) + ")" + stack);
}
}  // namespace

hid_t hdf5_check(hid_t rc, const char* call, const char* file, int line) {
  if (rc < 0) fail(call, file, line);
  return rc;
}

}  // namespace gpuscale
