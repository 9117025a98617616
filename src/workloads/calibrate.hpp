// Rates for the estimate (estimate.hpp), measured on a device just now: a
// gemm of each kind the plan uses at two sizes (the fixed cost of a call,
// and the rate beyond it), copies, elementwise passes, and how fast the host
// makes inputs; on the CPU, a copy past the largest cache, and for MPI
// transfers within a node (the host's copies, a hand-off between two
// threads, and for reductions of 32 MiB or more the fresh pages of their
// temporary buffers). Transfers between nodes, on a GPU or over NCCL, and the runner's
// own costs keep the defaults: nothing moves between ranks before the job
// runs (Rates::intra, Rates::inter say which). Each rate is a core's
// speed, which other work on a busy host barely changes: the median of short
// timings (a few milliseconds, within the scheduler's slice), and on the CPU
// backend the CPU time of longer steps (making inputs). The share of the
// cores a whole run gets beside that work is the estimate's to count
// (Rates::host).
#pragma once

#include <vector>

#include "core/plan.hpp"
#include "device/device.hpp"
#include "workloads/estimate.hpp"

namespace gpuscale {

// `defaults` with what was measured on `dev` put in; takes about budget_s
// on a CPU (a gemm size grows only while a call stays short).
Rates calibrate(Device& dev, const std::vector<Case>& plan, const Rates& defaults, double budget_s = 0.3);

}  // namespace gpuscale
