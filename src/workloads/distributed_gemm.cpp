#include "workloads/distributed_gemm.hpp"

#include <algorithm>
#include <random>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/metrics.hpp"
#include "workloads/distributed_gemm_report.hpp"
#include "workloads/gemm.hpp"
#include "workloads/typed_workload.hpp"

namespace gpuscale {

namespace {
// A and B, as every rank can regenerate any entry: multiples of 1/256 in [-1, 1).
constexpr std::uint64_t kSeedA = 0xA5A5A5A5ULL, kSeedB = 0x5A5A5A5AULL;

double entry(std::uint64_t seed, std::uint64_t i) {
  const std::uint64_t x = mix64(seed * kGoldenGamma + i);
  return static_cast<double>(static_cast<int>(x % 512) - 256) / 256.0;
}

double a_at(const GemmShape& s, std::size_t i, std::size_t l) { return entry(kSeedA, i * s.k + l); }
double b_at(const GemmShape& s, std::size_t l, std::size_t j) { return entry(kSeedB, l * s.n + j); }

// Why a group of `ranks` cannot run the case, once for the run and the estimate. `ranks` is the case's group: the
// job's world where group_size asks for more ranks than the job has.
std::string distributed_gemm_skip_reason(const DistributedGemmParams& d, int ranks) {
  if (d.group_size > ranks) {
    return "group_size = " + std::to_string(d.group_size) + " needs at least " + std::to_string(d.group_size) +
           " ranks; this job has " + std::to_string(ranks);
  }
  const GemmShape& s = d.problem.shape;
  if (ranks > 0 && (s.m % ranks != 0 || s.n % ranks != 0)) {
    return "m = " + std::to_string(s.m) + " and n = " + std::to_string(s.n) + " must be multiples of the group's " +
           std::to_string(ranks) + " ranks";
  }
  return "";
}

}  // namespace

DistributedGemmParams distributed_gemm_params(const Params& p) {
  DistributedGemmParams d;
  d.problem = gemm_problem(p);
  d.overlap = p.get_bool("overlap");
  d.group_size = p.has("group_size") ? static_cast<int>(p.get_int("group_size")) : 0;
  return d;
}

namespace {

WorkloadSchema distributed_gemm_schema() {
  WorkloadSchema s;
  s.name = "distributed_gemm";
  s.description = "one m x n x k product split over a group of ranks, B blocks around a ring; strong scaling";
  s.params = gemm_problem_specs(1024, "fp64");
  s.params.push_back({"group_size", ParamType::Int,
                      "ranks 0..group_size-1 share the problem, the others sit it out (default: all ranks)",
                      std::nullopt, 1, {}, kMaxCount});
  s.params.push_back({"overlap", ParamType::Bool,
                      "true: pass the next B block around the ring during the block product | false: after it",
                      Value{true}, 0, {}});
  return s;
}

class DistributedGemmType final : public TypedWorkloadType<DistributedGemmParams> {
 public:
  DistributedGemmType() : TypedWorkloadType(distributed_gemm_schema()) {}
  DistributedGemmParams parse(const Params& p) const override { return distributed_gemm_params(p); }
  const RowAnalysis* analysis() const override { return &distributed_gemm_analysis(); }
  Params small(const Params& p) const override { return gemm_small(p); }
  std::vector<Params> examples() const override {
    return example_params(schema(), {"size = 64", "m = 96\nn = 64\nk = 40\ndtype = \"fp32\"\noverlap = false"});
  }

 private:
  std::unique_ptr<Workload> make_for(const DistributedGemmParams& d) const override {
    return std::make_unique<DistributedGemmWorkload>(d);
  }
  std::string unsupported_for(const DistributedGemmParams& d, const RunTarget& target) const override {
    return gemm_problem_unsupported(d.problem, target.backend);
  }
  // The largest share, a group of one's (blocks shrink as the group grows).
  MemoryNeed memory_for(const DistributedGemmParams& d, bool buffers_on_host) const override;
  CaseWork work_for(const DistributedGemmParams& d, const JobShape& job) const override;
  std::optional<Scope> scope_for(const DistributedGemmParams&) const override { return Scope::world; }
  int group_size_for(const DistributedGemmParams& d) const override { return d.group_size; }
  // One group: serial and parallel are the same.
  bool single_turn_for(const DistributedGemmParams&) const override { return true; }
};

MemoryNeed DistributedGemmType::memory_for(const DistributedGemmParams& d, bool buffers_on_host) const {
  const GemmProblem& g = d.problem;
  const double n = g.shape.n, k = g.shape.k, e = static_cast<double>(dtype_size(g.dtype));
  // As GemmOperands' (A's rows, B's columns and C's blocks, their host copies), and two blocks of B from the ring.
  MemoryNeed need = gemm_operands_memory(g);
  need.device_bytes += 2 * k * n * e;
  // MPI on a GPU stages a block each way (2 k n/g elements, g >= 2); NCCL does not.
  if (!buffers_on_host) need.host_bytes += k * n * e;
  return need;
}

CaseWork DistributedGemmType::work_for(const DistributedGemmParams& d, const JobShape& job) const {
  CaseWork cw;
  const GemmProblem& g = d.problem;
  const int size = d.group_size > 0 ? d.group_size : job.ranks;
  cw.skip_reason = distributed_gemm_skip_reason(d, std::min(size, job.ranks));
  const double n = std::max(1, size);
  const double rows = g.shape.m / static_cast<int>(n), cols = g.shape.n / static_cast<int>(n);
  cw.sample.add_gemm(g.dtype, g.impl, rows, cols, g.shape.k, n);
  // n - 1 shifts of a block around the ring: a sendrecv each.
  const int per_node = ranks_per_node(job);
  const int nodes = std::min(job.nodes, (std::min(size, job.ranks) + per_node - 1) / per_node);
  cw.sample.add_transfer({"sendrecv", g.shape.k * cols * static_cast<double>(dtype_size(g.dtype)), 1.0,
                          static_cast<int>(n), std::max(1, nodes), 0}, n - 1);
  cw.sample.overlapped = d.overlap;
  cw.busy_ranks_per_node = std::min(size, ranks_per_node(job));
  return cw;
}

}  // namespace

const WorkloadType& distributed_gemm_type() {
  static const DistributedGemmType type;
  return type;
}

std::string DistributedGemmWorkload::skip_reason(const CaseContext& ctx) const {
  // The runner gives the world as the group where group_size is larger than the job; the ranks that sit the case
  // out have nothing to say.
  return ctx.group->member() ? distributed_gemm_skip_reason(p_, ctx.group->size) : "";
}

void DistributedGemmWorkload::setup(CaseContext& ctx, std::uint64_t) {
  Device& dev = ctx.dev;
  rank_ = ctx.group->member() ? ctx.group->rank : -1;
  if (rank_ < 0) return;
  g_ = ctx.group->size;
  const GemmShape& s = p_.problem.shape;
  rows_ = s.m / g_;
  cols_ = s.n / g_;
  std::vector<double> a(static_cast<std::size_t>(rows_) * s.k), b(static_cast<std::size_t>(s.k) * cols_);
  for (int i = 0; i < rows_; ++i) {
    for (int l = 0; l < s.k; ++l) a[static_cast<std::size_t>(i) * s.k + l] = a_at(s, rank_ * rows_ + i, l);
  }
  for (int l = 0; l < s.k; ++l) {
    for (int j = 0; j < cols_; ++j) b[static_cast<std::size_t>(l) * cols_ + j] = b_at(s, l, rank_ * cols_ + j);
  }
  a_ = upload_values(dev, a, p_.problem.dtype);
  own_ = upload_values(dev, b, p_.problem.dtype);
  b_[0] = dev.alloc(own_.bytes());
  b_[1] = dev.alloc(own_.bytes());
  const std::size_t c_bytes = static_cast<std::size_t>(rows_) * cols_ * dtype_size(p_.problem.dtype);
  c_.clear();
  for (int j = 0; j < g_; ++j) {
    c_.push_back(dev.alloc(c_bytes));
    dev.poison(c_.back().data(), c_bytes);  // NaN until computed
  }
}

void DistributedGemmWorkload::run_sample(CaseContext& ctx) {
  if (rank_ < 0) return;  // sits this case out
  Device& dev = ctx.dev;
  PhaseLog* log = ctx.phases;
  auto begin = [log](const char* phase) { return log ? log->begin(phase) : -1; };
  auto end = [log](int interval) {
    if (log) log->end(interval);
  };
  const GemmShape block{rows_, cols_, p_.problem.shape.k};
  const std::size_t count = static_cast<std::size_t>(p_.problem.shape.k) * cols_;
  const int next = (rank_ + 1) % g_, prev = (rank_ + g_ - 1) % g_;
  // Step s multiplies with the block at hand: its own at step 0, then the one received in step s-1.
  auto at = [this](int s) -> const DeviceBuffer& { return s == 0 ? own_ : b_[s % 2]; };
  auto pass = [&](int s) {  // sends the block at hand on, receives the next one
    dev.use_lane(Lane::comm);
    const int t = begin(kTransferPhase);
    ctx.data().sendrecv(at(s).data(), next, b_[(s + 1) % 2].data(), prev, count, p_.problem.dtype);
    end(t);
  };
  for (int s = 0; s < g_; ++s) {
    const bool more = s + 1 < g_;
    if (s > 0) dev.wait(Lane::compute, Lane::comm);  // the block received in step s-1
    if (p_.overlap && more) {
      // Receiving overwrites the buffer step s-1's product read: wait for that product, not for step s's.
      dev.wait(Lane::comm, Lane::compute);
      pass(s);
    }
    dev.use_lane(Lane::compute);
    const int m = begin(kComputePhase);
    const int j = (rank_ + g_ - s) % g_;  // the block at hand started on rank j: C's column block j
    dev.gemm(p_.problem.impl, p_.problem.dtype, block, a_, at(s), c_[j]);
    end(m);
    if (!p_.overlap && more) {
      dev.wait(Lane::comm, Lane::compute);
      pass(s);
    }
  }
  dev.use_lane(Lane::compute);
}

double DistributedGemmWorkload::flops_per_sample() const {
  return rank_ < 0 ? 0.0 : gemm_flops(rows_, p_.problem.shape.n, p_.problem.shape.k);
}

Verification DistributedGemmWorkload::verify(CaseContext& ctx) {
  Verification v;
  v.tolerance = gemm_tolerance(p_.problem.dtype, p_.problem.shape.k);
  v.ok = true;
  if (rank_ < 0) return v;
  Device& dev = ctx.dev;
  const GemmShape& s = p_.problem.shape;
  std::mt19937_64 rng(12345 + static_cast<std::uint64_t>(rank_));
  std::vector<unsigned char> bytes(c_[0].bytes());
  std::vector<double> c(static_cast<std::size_t>(rows_) * cols_);
  const auto rows = static_cast<std::size_t>(rows_), cols = static_cast<std::size_t>(cols_);
  for (int j = 0; j < g_; ++j) {
    dev.copy_to_host(bytes.data(), c_[j], bytes.size());
    decode(bytes.data(), c.size(), p_.problem.dtype, c.data());
    // Block j's entry (i, jj) is C's (rank_ rows + i, j cols + jj).
    v.wrong_elements += check_entries(
        sampled_entries(rows, cols, 2, 16, rng), static_cast<std::size_t>(s.k),
        [&](std::size_t i, std::size_t jj) { return c[i * cols + jj]; },
        [&](std::size_t i, std::size_t l) { return a_at(s, static_cast<std::size_t>(rank_) * rows + i, l); },
        [&](std::size_t l, std::size_t jj) { return b_at(s, l, static_cast<std::size_t>(j) * cols + jj); }, v);
  }
  v.ok = v.wrong_elements == 0;
  return v;
}

}  // namespace gpuscale
