// A table of rates measured on another machine (configs/rates/h100.toml), for `gpuscale check --rates`: a plan's
// estimate for a GPU it is not run on. What the table leaves out is the backend's defaults (default_rates).
//
//   gpuscale_rates = 1
//   backend = "cuda"                  # the backend the rates are of
//   machine = "NVIDIA H100 80GB HBM3" # for the output
//   device_memory_gib = 79.2          # optional: the memory check's GPU
//   [gemm]                            # TFLOP/s of the vendor library; call_us: one call's fixed cost
//   bf16 = 796
//   [gemm.tiled]                      # an implementation of our own
//   fp32 = 8.8
//   [copies]                          # GB/s per kind of copy (host-pinned, host-pageable, device, pass); call_us
//   device = 1500
#pragma once

#include <string>

#include "workloads/estimate.hpp"

namespace gpuscale {

constexpr int kRatesFormat = 1;

struct RatesFile {
  Rates rates;
  double device_memory_bytes = 0;  // 0: not given
};

// InputError naming the file and the key for anything it cannot take: not a rates table, an unknown key, dtype,
// implementation or kind of copy, a rate that is not a number above 0.
// Its links are the defaults of MPI: assume_links sets the data plane's.
RatesFile read_rates_file(const std::string& path);

}  // namespace gpuscale
