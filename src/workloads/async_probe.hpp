// async: how much a host synchronization costs. A sample is `ops` small
// matmuls; the runner records the host's enqueue time (until the launch calls
// return) beside the completed time (after synchronize).
//   sync = "end":  one synchronize, by the runner, after the last op;
//   sync = "each": the host waits after every op.
//   log_norm = "host":   after every op, the Frobenius norm of C is copied to
//                        the host (which must wait for it), as a training loop
//                        that prints a loss every step;
//   log_norm = "device": the squared norms accumulate on the device and are
//                        copied once, at the end;
//   log_norm = "none".
// Verification: C as for gemm, and the logged norm against the host's.
#pragma once

#include "workloads/gemm_operands.hpp"

namespace gpuscale {

const WorkloadType& async_type();

// A case's keys, parsed once for the workload and for its type's hooks.
struct AsyncProbeParams {
  GemmProblem problem;
  std::int64_t ops = 1;
  bool sync_each = false;        // key sync
  std::string log_norm = "none";
  bool graph = false;            // the runner records the sample as a graph (uses_graph)
  static AsyncProbeParams from(const Params& p);
};

class AsyncProbeWorkload final : public Workload {
 public:
  explicit AsyncProbeWorkload(const AsyncProbeParams& p);
  explicit AsyncProbeWorkload(const Params& p) : AsyncProbeWorkload(AsyncProbeParams::from(p)) {}
  void setup(CaseContext& ctx, std::uint64_t seed) override;
  void run_sample(CaseContext& ctx) override;
  double flops_per_sample() const override;
  double bytes_per_sample() const override { return 0.0; }
  Verification verify(CaseContext& ctx) override;

 private:
  GemmProblem problem_;
  std::int64_t ops_;
  bool sync_each_;
  std::string log_norm_;
  GemmOperands operands_;
  DeviceBuffer acc_;        // one double on the device
  HostBuffer acc_host_;     // pinned, where the norm lands on the host
  double last_norm_sq_ = 0.0;  // what the host saw last
};

}  // namespace gpuscale
