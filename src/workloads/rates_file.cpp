#include "workloads/rates_file.hpp"

#include <cmath>

#include "core/error.hpp"
#include "core/text.hpp"
#include "device/dtype.hpp"

#include <toml++/toml.h>

namespace gpuscale {

namespace {

[[noreturn]] void not_rates(const std::string& path, const std::string& why) {
  throw InputError(path + ": not a gpuscale rates table (configs/rates/h100.toml is one): " + why);
}

double positive(const std::string& path, const std::string& key, const toml::node& node) {
  const auto v = node.value<double>();
  if (!v || !std::isfinite(*v) || !(*v > 0)) throw InputError(path + ": '" + key + "' is not a number above 0");
  return *v;
}

std::string known_dtypes() {
  std::string s;
  for (const auto& n : dtype_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// [gemm] (the vendor library's) or [gemm.IMPL]: a rate in TFLOP/s per dtype, and call_us.
void read_gemm(const std::string& path, const std::string& where, const toml::table& t, GemmImpl impl, Rates& r) {
  double call_s = r.gemm_default.call_s;
  if (const toml::node* c = t.get("call_us")) call_s = positive(path, where + ".call_us", *c) * 1e-6;
  for (const auto& [key, node] : t) {
    const std::string k(key.str()), name = where + "." + k;
    if (k == "call_us") continue;
    if (const toml::table* sub = node.as_table()) {
      if (impl != GemmImpl::vendor) not_rates(path, "'" + name + "' is a table inside an implementation's");
      GemmImpl own;
      try {
        own = parse_gemm_impl(k);
      } catch (const std::invalid_argument&) {
        throw InputError(path + ": '" + name + "': no such gemm implementation (" + join(gemm_impl_names(), ", ") +
                         ")");
      }
      read_gemm(path, name, *sub, own, r);
      continue;
    }
    DType t_;
    try {
      t_ = parse_dtype(k);
    } catch (const std::invalid_argument&) {
      throw InputError(path + ": '" + name + "': no such dtype (" + known_dtypes() + ")");
    }
    r.gemm[{t_, impl}] = {call_s, positive(path, name, node) * 1e12};
  }
  if (impl == GemmImpl::vendor) r.gemm_default.call_s = call_s;
}

void read_copies(const std::string& path, const toml::table& t, Rates& r) {
  for (const auto& [key, node] : t) {
    const std::string k(key.str()), name = "copies." + k;
    if (k == "call_us") {
      r.copy_call_s = positive(path, name, node) * 1e-6;
    } else if (r.stream_bytes_s.count(k) == 0) {
      std::string kinds;
      for (const auto& [kind, rate] : r.stream_bytes_s) kinds += (kinds.empty() ? "" : ", ") + kind;
      throw InputError(path + ": '" + name + "': no such kind of copy (" + kinds + ")");
    } else {
      r.stream_bytes_s[k] = positive(path, name, node) * 1e9;
    }
  }
}

std::string text_of(const std::string& path, const toml::table& root, const char* key) {
  const toml::node* n = root.get(key);
  if (!n) return "";
  const auto v = n->value<std::string>();
  if (!v) throw InputError(path + ": '" + key + "' is not a string");
  return *v;
}

}  // namespace

RatesFile read_rates_file(const std::string& path) {
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    not_rates(path, std::string(e.description()));
  }
  const auto format = root["gpuscale_rates"].value<std::int64_t>();
  if (!format) not_rates(path, "it has no key gpuscale_rates");
  if (*format != kRatesFormat) {
    throw InputError(path + ": rates table format " + std::to_string(*format) + "; this gpuscale reads format " +
                     std::to_string(kRatesFormat));
  }
  const auto backend = parse_backend(text_of(path, root, "backend"));
  if (!backend) throw InputError(path + ": 'backend' is missing or not \"cuda\" or \"cpu\"");
  RatesFile f;
  f.rates = default_rates(*backend, CommKind::mpi);
  const std::string machine = text_of(path, root, "machine"), measured = text_of(path, root, "measured");
  for (const auto& [key, node] : root) {
    const std::string k(key.str());
    if (k == "gpuscale_rates" || k == "backend" || k == "machine" || k == "measured") continue;
    if (k == "device_memory_gib") {
      f.device_memory_bytes = positive(path, k, node) * 1073741824.0;
    } else if (k == "gemm" && node.is_table()) {
      read_gemm(path, "gemm", *node.as_table(), GemmImpl::vendor, f.rates);
    } else if (k == "copies" && node.is_table()) {
      read_copies(path, *node.as_table(), f.rates);
    } else {
      not_rates(path, "unknown key '" + k + "' (it holds backend, machine, measured, device_memory_gib, [gemm] "
                      "and [copies])");
    }
  }
  f.rates.source = "rates of " + (machine.empty() ? std::string("another machine") : machine) +
                   (measured.empty() ? "" : " (" + measured + ")") + " from " + path + ", " + f.rates.source +
                   " for the rest";
  return f;
}

}  // namespace gpuscale
