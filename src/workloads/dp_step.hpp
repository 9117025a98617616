// dp_step: one data-parallel training step per sample on every rank of the
// case's group, `layers` layers of hidden x hidden weights on a local batch of
// `batch` rows. Forward: X_{l+1} = X_l W_l. Backward, last layer first: the
// input gradient G_l = G_{l+1} W_l^T and the weight gradient dW_l = X_l^T G_{l+1}
// (Device::gemm has no transposes: W_l^T and X_l^T are made once, in setup).
// The weight gradients are summed over the group with allreduce in buckets of
// about `bucket_bytes` (consecutive layers, last first, as PyTorch DDP does),
// on the comm lane:
//   overlap = true:  a bucket's allreduce starts once the backward of its
//                    layers is done, while earlier layers' backward runs;
//   overlap = false: all of the backward, then every allreduce.
// Phases "compute" (each layer's matmuls) and "transfer" (each bucket).
// Verification: every element of every reduced gradient, exactly (see verify).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workloads/workload.hpp"

namespace gpuscale {

const WorkloadType& dp_step_type();

// A case's keys, parsed once for the workload and for its type's hooks.
struct DpStepParams {
  int hidden = 0, batch = 0, layers = 0;
  DType dtype = DType::fp32;
  std::size_t bucket_bytes = 0;
  bool overlap = true;
  Scope scope = Scope::world;
};
DpStepParams dp_step_params(const Params& p);

class DpStepWorkload final : public Workload {
 public:
  explicit DpStepWorkload(const DpStepParams& p);
  std::string skip_reason(const CaseContext& ctx) const override;
  void setup(CaseContext& ctx, std::uint64_t seed) override;
  void run_sample(CaseContext& ctx) override;
  double flops_per_sample() const override;  // 3 matmuls per layer: 3 * layers * 2 * batch * hidden^2
  double bytes_per_sample() const override;  // gradient bytes reduced
  Verification verify(CaseContext& ctx) override;
  std::string note(const CaseContext& ctx) const override;
  int turn(const CaseContext& ctx, int world_rank) const override;  // groups take turns
  bool uses_lanes() const override { return true; }

 private:
  // Layers high down to low (consecutive), whose gradients lie together at
  // `offset` elements of the gradient buffer: its allreduce may start once
  // layer `low`'s backward is done.
  struct Bucket {
    int high = 0, low = 0;
    std::size_t offset = 0, count = 0;
  };
  std::size_t square() const { return static_cast<std::size_t>(p_.hidden) * p_.hidden; }
  std::size_t grad_offset(int layer) const;  // elements; the last layer's gradient comes first
  void poison_gradients(Device& dev);
  void reduce(CaseContext& ctx, const Bucket& b);  // on the comm lane, phase "transfer"

  DpStepParams p_;
  std::vector<Bucket> buckets_;

  int rank_ = 0, size_ = 1;  // in the group
  // The weights are signed permutations (one +-1 per row and column), so that
  // every activation and gradient stays a small integer, exact in fp32.
  std::vector<std::vector<int>> perm_, sign_;  // [layer][row]: W_l[i][perm[i]] = sign[i]
  std::vector<double> x0_, g_out_;  // this rank's input (scaled by rank + 1) and the loss gradient, batch x hidden

  std::vector<DeviceBuffer> w_, wt_;    // W_l and W_l^T
  std::vector<DeviceBuffer> act_;       // X_0 .. X_layers, batch x hidden
  std::vector<DeviceBuffer> act_t_;     // X_l^T, hidden x batch (made in setup)
  std::vector<DeviceBuffer> act_grad_;  // G_0 .. G_layers (G_layers: the loss gradient), batch x hidden
  DeviceBuffer grads_;                  // every dW_l, hidden x hidden each, bucket by bucket
  std::vector<DeviceBuffer> grad_view_;  // dW_l, a window into grads_
};

}  // namespace gpuscale
