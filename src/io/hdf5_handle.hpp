// RAII for HDF5 ids and a check that turns a failed call into an Hdf5Error
// carrying the call, file:line and the HDF5 error stack.
#pragma once

#include <hdf5.h>

#include <string>

#include "core/error.hpp"

namespace gpuscale {

// Silences HDF5's own printing: errors reach the user through our messages.
void hdf5_quiet();

// For this process, an external link (a link into another file) is never followed: traversing one fails with
// "an external link to FILE, which gpuscale does not follow". A result file never holds one; one that does is
// damaged, and following it could open anything (a FIFO waits for ever).
void hdf5_refuse_external_links();

// A failed HDF5 call. what(): the call, where in our source and HDF5's
// reasons (for a developer); reasons(): HDF5's descriptions of what went
// wrong, innermost first, without call names or source paths (for a user).
class Hdf5Error : public RuntimeError {
 public:
  Hdf5Error(const std::string& what, std::string reasons) : RuntimeError(what), reasons_(std::move(reasons)) {}
  const std::string& reasons() const { return reasons_; }

 private:
  std::string reasons_;
};

// Throws Hdf5Error when rc < 0 (the HDF5 convention for failure).
hid_t hdf5_check(hid_t rc, const char* call, const char* file, int line);

// HDF5's descriptions of the errors on its stack now, innermost first ("; "
// between them), and the stack cleared.
std::string hdf5_take_errors();

class H5Id {
 public:
  using Close = herr_t (*)(hid_t);
  H5Id() = default;
  H5Id(hid_t id, Close close) : id_(id), close_(close) {}
  H5Id(H5Id&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = H5I_INVALID_HID; }
  H5Id& operator=(H5Id&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.id_;
      close_ = o.close_;
      o.id_ = H5I_INVALID_HID;
    }
    return *this;
  }
  H5Id(const H5Id&) = delete;
  H5Id& operator=(const H5Id&) = delete;
  ~H5Id() { reset(); }
  hid_t get() const { return id_; }
  // Gives up the id without closing it (a file left open on purpose: closing would write it).
  hid_t release() noexcept {
    const hid_t id = id_;
    id_ = H5I_INVALID_HID;
    return id;
  }
  void reset() noexcept {
    if (id_ >= 0 && close_) {
      if (close_(id_) < 0) H5Eclear2(H5E_DEFAULT);  // closing what a damaged file left half-open may fail
    }
    id_ = H5I_INVALID_HID;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Close close_ = nullptr;
};

}  // namespace gpuscale

#define GPUSCALE_H5(call) ::gpuscale::hdf5_check((call), #call, __FILE__, __LINE__)
