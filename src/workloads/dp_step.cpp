#include "workloads/dp_step.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>

#include "core/hash.hpp"
#include "device/capabilities.hpp"
#include "workloads/collective_pattern.hpp"
#include "workloads/gemm_operands.hpp"
#include "workloads/overlap_report.hpp"
#include "workloads/typed_workload.hpp"

namespace gpuscale {

DpStepParams dp_step_params(const Params& p) {
  DpStepParams d;
  d.hidden = static_cast<int>(p.get_int("hidden"));
  d.batch = static_cast<int>(p.get_int("batch"));
  d.layers = static_cast<int>(p.get_int("layers"));
  d.dtype = parse_dtype(p.get_string("dtype"));
  d.bucket_bytes = static_cast<std::size_t>(p.get_int("bucket_bytes"));
  d.overlap = p.get_bool("overlap");
  d.scope = parse_scope(p.get_string("scope"));
  return d;
}

namespace {

constexpr double kMaxValue = 2;  // inputs and loss gradients are integers in [-2, 2]

std::uint64_t next_random(std::uint64_t& state) {  // the SplitMix64 generator
  return mix64(state += kGoldenGamma);
}

double small_integer(std::uint64_t& state) {
  return static_cast<double>(next_random(state) % 5) - kMaxValue;
}

// Integers up to 2^24 (fp32) or 2^53 (fp64) are exact, and so is every sum of them that stays there.
double exact_limit(DType t) {
  return std::ldexp(1.0, t == DType::fp64 ? std::numeric_limits<double>::digits : std::numeric_limits<float>::digits);
}

// Rows of the batch whose input is not zero: every partial sum of a gradient
// element, in the matmul and over a group of n (rank r scaled by r + 1), is
// at most 2 * 2 * rows * n(n+1)/2, which must stay exact. 0: not even one row.
std::int64_t live_rows(std::int64_t batch, int n, DType t) {
  const double ranks_sum = 0.5 * n * (n + 1.0);
  const double rows = std::floor(exact_limit(t) / (kMaxValue * kMaxValue * ranks_sum));
  return static_cast<std::int64_t>(std::min(static_cast<double>(batch), rows));
}

// Why a group of `size` ranks on `nodes` nodes cannot run the case, once for the run and the estimate.
std::string dp_step_skip_reason(const DpStepParams& d, int nodes, int size) {
  if (std::string why = scope_skip_reason(d.scope, nodes); !why.empty()) return why;
  if (live_rows(d.batch, size, d.dtype) < 1) {
    return "a group of " + std::to_string(size) + " ranks sums more than " + dtype_name(d.dtype) +
           " holds exactly, so the gradients cannot be verified; use dtype fp64";
  }
  return "";
}

// Column i of a matrix is sign[i] times column from[i] of another.
struct ColumnMap {
  std::vector<int> from, sign;
};

ColumnMap identity_map(int n) {
  ColumnMap m{std::vector<int>(static_cast<std::size_t>(n)), std::vector<int>(static_cast<std::size_t>(n), 1)};
  for (int i = 0; i < n; ++i) m.from[static_cast<std::size_t>(i)] = i;
  return m;
}

// X_{l+1} = X_l W_l, with W_l[i][perm[i]] = sign[i]: column perm[i] of
// X_{l+1} is sign[i] times column i of X_l.
ColumnMap forward(const ColumnMap& x, const std::vector<int>& perm, const std::vector<int>& sign) {
  ColumnMap next = x;
  for (std::size_t i = 0; i < perm.size(); ++i) {
    const auto to = static_cast<std::size_t>(perm[i]);
    next.from[to] = x.from[i];
    next.sign[to] = sign[i] * x.sign[i];
  }
  return next;
}

// G_l = G_{l+1} W_l^T: column i of G_l is sign[i] times column perm[i] of G_{l+1}.
ColumnMap backward(const ColumnMap& g, const std::vector<int>& perm, const std::vector<int>& sign) {
  ColumnMap next = g;
  for (std::size_t i = 0; i < perm.size(); ++i) {
    const auto from = static_cast<std::size_t>(perm[i]);
    next.from[i] = g.from[from];
    next.sign[i] = sign[i] * g.sign[from];
  }
  return next;
}

// A window into `whole`, for calls that take a DeviceBuffer; `whole` owns the memory and outlives it.
DeviceBuffer window(const DeviceBuffer& whole, std::size_t offset_bytes, std::size_t bytes) {
  return DeviceBuffer(static_cast<char*>(whole.data()) + offset_bytes, bytes, [](void*) noexcept {});
}

void upload(Device& dev, DeviceBuffer& dst, const std::vector<double>& values, DType t) {
  std::vector<unsigned char> bytes(values.size() * dtype_size(t));
  encode(values.data(), values.size(), t, bytes.data());
  dev.copy_to_device(dst, bytes.data(), bytes.size());
}

WorkloadSchema dp_step_schema() {
  WorkloadSchema s;
  s.name = "dp_step";
  s.description = "a data-parallel training step: forward and backward matmuls of `layers` layers, weight gradients "
                  "summed over the group with allreduce in buckets, overlapped with the backward or after it";
  constexpr auto kDim = static_cast<double>(kMaxGemmDim);  // hidden and batch are gemm dimensions
  // Each layer holds six buffers and marks up to three phase intervals a sample (an int index).
  constexpr double kMaxLayers = 1048576;  // 2^20
  s.params = {
      {"hidden", ParamType::Int, "width of every layer: weights are hidden x hidden", Value{std::int64_t{512}}, 1, {},
       kDim},
      {"batch", ParamType::Int, "rows of the local batch on each rank", Value{std::int64_t{64}}, 1, {}, kDim},
      {"layers", ParamType::Int, "layers: a forward and two backward matmuls each", Value{std::int64_t{8}}, 1, {},
       kMaxLayers},
      {"dtype", ParamType::String, "fp32 | fp64", Value{std::string("fp32")}, 0, {"fp32", "fp64"}},
      {"bucket_bytes", ParamType::Int, "gradient bytes per allreduce, about: consecutive layers' gradients, last "
       "layer first, until a bucket holds at least this many (as PyTorch DDP's bucket_cap_mb)",
       Value{std::int64_t{25} << 20}, 1, {}, kMaxBufferBytes},
      {"overlap", ParamType::Bool, "true: reduce each bucket while the backward of earlier layers runs | false: all "
       "of the backward, then every allreduce", Value{true}, 0, {}},
      {"scope", ParamType::String, "world (all ranks) | intra-node (a group per node) | inter-node (a group per "
       "local rank, one rank per node)", Value{std::string("world")}, 0, scope_names()},
  };
  return s;
}

// Like collective: the groups of its scope, and with one group of all ranks serial is parallel.
class DpStepType final : public TypedWorkloadType<DpStepParams> {
 public:
  DpStepType() : TypedWorkloadType(dp_step_schema()) {}
  DpStepParams parse(const Params& p) const override { return dp_step_params(p); }
  // Check-time refusals: shapes beyond Device::gemm's int (as given: parse makes them ints), a dtype the transport
  // cannot add.
  std::string unsupported(const Params& p, const RunTarget& target) const override;
  const RowAnalysis* analysis() const override { return &overlap_analysis(); }
  // For the calibration: layers of at most 512 x 512, a batch of at most 64, two layers (tens of MiB at most).
  Params small(const Params& p) const override {
    Params out = p;
    out.set("hidden", std::min<std::int64_t>(p.get_int("hidden"), 512));
    out.set("batch", std::min<std::int64_t>(p.get_int("batch"), 64));
    out.set("layers", std::min<std::int64_t>(p.get_int("layers"), 2));
    return out;
  }
  // One bucket, several, and fp64 in small buckets.
  std::vector<Params> examples() const override {
    return example_params(schema(), {"hidden = 64\nbatch = 8\nlayers = 4",
                                     "hidden = 64\nbatch = 8\nlayers = 4\nbucket_bytes = 20000\noverlap = false",
                                     "hidden = 128\nbatch = 16\nlayers = 3\ndtype = \"fp64\"\nbucket_bytes = 8192"});
  }

 private:
  std::unique_ptr<Workload> make_for(const DpStepParams& d) const override {
    return std::make_unique<DpStepWorkload>(d);
  }
  MemoryNeed memory_for(const DpStepParams& d, bool buffers_on_host) const override;
  CaseWork work_for(const DpStepParams& d, const JobShape& job) const override;
  std::optional<Scope> scope_for(const DpStepParams& d) const override { return d.scope; }
  bool single_turn_for(const DpStepParams& d) const override { return single_group(d.scope); }
};

std::string DpStepType::unsupported(const Params& p, const RunTarget& target) const {
  for (const char* key : {"hidden", "batch", "layers"}) {
    if (p.get_int(key) > INT_MAX) {
      return std::string("key '") + key + "' must be at most " + std::to_string(INT_MAX);
    }
  }
  const DType t = parse(p).dtype;
  if (std::string why = gemm_unsupported(target.backend, GemmImpl::vendor, t); !why.empty()) return why;
  return data_comm_unsupported(target.comm, "allreduce", t);
}

// Per layer W, W^T, X^T and dW, and X and G of every layer and the input.
// On the host the larger of setup (W, W^T, X and X^T as doubles, an upload
// or the gradients' poison) and the check (the gradients downloaded and
// decoded, the reference), besides what the workload keeps.
MemoryNeed DpStepType::memory_for(const DpStepParams& d, bool buffers_on_host) const {
  const double h = d.hidden, rows = d.batch, layers = d.layers;
  const double e = static_cast<double>(dtype_size(d.dtype));
  const double grads = layers * h * h * e;
  const double kept = 8 * layers * h + 16 * rows * h;  // permutations and signs (ints), X_0 and the loss gradient
  const double poison = std::min(grads, static_cast<double>(Device::kPoisonChunkBytes));
  const double setup = 16 * h * h + 16 * rows * h + std::max({h * h * e, rows * h * e, poison});
  const double check = grads + 8 * layers * h * h + 8 * h * h + 8 * (layers + 4) * h;  // and column maps
  MemoryNeed need{e * (3 * layers * h * h + (3 * layers + 2) * rows * h), kept + std::max(setup, check)};
  // MPI on a GPU stages a bucket (at most every gradient) in pinned host memory; NCCL does not.
  if (!buffers_on_host) need.host_bytes += grads;
  return need;
}

CaseWork DpStepType::work_for(const DpStepParams& d, const JobShape& job) const {
  CaseWork cw;
  const double h = d.hidden, batch = d.batch, layers = d.layers;
  cw.sample.add_gemm(d.dtype, GemmImpl::vendor, batch, h, h, 2 * layers);  // forward, and the activations' gradients
  cw.sample.add_gemm(d.dtype, GemmImpl::vendor, h, h, batch, layers);      // the weights' gradients
  const ScopeGroups g = scope_groups(d.scope, job);
  cw.skip_reason = dp_step_skip_reason(d, job.nodes, g.size);
  const double layer_bytes = h * h * static_cast<double>(dtype_size(d.dtype));
  const double per_bucket = std::max(1.0, std::ceil(static_cast<double>(d.bucket_bytes) / layer_bytes));
  const double buckets = std::ceil(layers / per_bucket);  // of layer_bytes x layers in all
  cw.sample.add_transfer({"allreduce", layers * layer_bytes / buckets, bus_factor(CollOp::allreduce, g.size), g.size,
                          g.nodes, 0}, buckets);
  cw.sample.across_nodes = g.across_nodes;
  cw.sample.overlapped = d.overlap;
  cw.turns = g.count;
  cw.busy_ranks_per_node = ranks_per_node(job);
  return cw;
}

}  // namespace

const WorkloadType& dp_step_type() {
  static const DpStepType type;
  return type;
}

DpStepWorkload::DpStepWorkload(const DpStepParams& p) : p_(p) {
  // As PyTorch DDP fills its buckets: gradients in the order the backward
  // makes them, a bucket closed once it holds at least bucket_bytes.
  Bucket b{p_.layers - 1, p_.layers - 1, 0, 0};
  for (int l = p_.layers - 1; l >= 0; --l) {
    b.low = l;
    b.count += square();
    if (b.count * dtype_size(p_.dtype) >= p_.bucket_bytes || l == 0) {
      buckets_.push_back(b);
      b = Bucket{l - 1, l - 1, b.offset + b.count, 0};
    }
  }
}

std::size_t DpStepWorkload::grad_offset(int layer) const {
  return static_cast<std::size_t>(p_.layers - 1 - layer) * square();
}

std::string DpStepWorkload::skip_reason(const CaseContext& ctx) const {
  return dp_step_skip_reason(p_, ctx.nodes, ctx.size());
}

void DpStepWorkload::setup(CaseContext& ctx, std::uint64_t) {
  Device& dev = ctx.dev;
  rank_ = ctx.rank();
  size_ = ctx.size();
  const auto h = static_cast<std::size_t>(p_.hidden), rows = static_cast<std::size_t>(p_.batch);
  const std::size_t e = dtype_size(p_.dtype);

  // The same model and data on every rank (a seed from the shape, not the
  // rank's): rank r's input is scaled by r + 1, so the group's sum is the
  // gradient of one rank times n(n+1)/2, and a missing or doubled rank shows.
  std::uint64_t state = 0x64705F73746570ULL ^ (static_cast<std::uint64_t>(p_.hidden) << 40) ^
                        (static_cast<std::uint64_t>(p_.batch) << 16) ^ static_cast<std::uint64_t>(p_.layers);
  perm_.assign(static_cast<std::size_t>(p_.layers), {});
  sign_.assign(static_cast<std::size_t>(p_.layers), {});
  for (int l = 0; l < p_.layers; ++l) {
    auto& perm = perm_[static_cast<std::size_t>(l)];
    auto& sign = sign_[static_cast<std::size_t>(l)];
    perm = identity_map(p_.hidden).from;
    for (std::size_t i = h - 1; i > 0; --i) std::swap(perm[i], perm[next_random(state) % (i + 1)]);
    sign.resize(h);
    for (auto& s : sign) s = next_random(state) % 2 ? 1 : -1;
  }
  const auto live = static_cast<std::size_t>(live_rows(p_.batch, size_, p_.dtype));
  x0_.assign(rows * h, 0.0);
  g_out_.assign(rows * h, 0.0);
  for (std::size_t i = 0; i < live * h; ++i) x0_[i] = small_integer(state);
  for (auto& g : g_out_) g = small_integer(state);

  w_.clear();
  wt_.clear();
  std::vector<double> w(h * h), wt(h * h);
  for (int l = 0; l < p_.layers; ++l) {
    std::fill(w.begin(), w.end(), 0.0);
    std::fill(wt.begin(), wt.end(), 0.0);
    for (std::size_t i = 0; i < h; ++i) {
      const auto j = static_cast<std::size_t>(perm_[static_cast<std::size_t>(l)][i]);
      w[i * h + j] = wt[j * h + i] = sign_[static_cast<std::size_t>(l)][i];
    }
    w_.push_back(dev.alloc(h * h * e));
    wt_.push_back(dev.alloc(h * h * e));
    upload(dev, w_.back(), w, p_.dtype);
    upload(dev, wt_.back(), wt, p_.dtype);
  }

  // X_l^T, made here from X_0 and the weights (X_{l+1} = X_l W_l permutes and
  // signs X_l's columns); the forward's own X_l are computed every sample.
  const double scale = rank_ + 1.0;
  act_.clear();
  act_t_.clear();
  for (int l = 0; l <= p_.layers; ++l) act_.push_back(dev.alloc(rows * h * e));
  std::vector<double> x(rows * h);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = scale * x0_[i];
  upload(dev, act_[0], x, p_.dtype);
  ColumnMap fwd = identity_map(p_.hidden);
  std::vector<double> xt(h * rows);
  for (int l = 0; l < p_.layers; ++l) {
    for (std::size_t i = 0; i < h; ++i) {
      for (std::size_t b = 0; b < rows; ++b) {
        xt[i * rows + b] = scale * fwd.sign[i] * x0_[b * h + static_cast<std::size_t>(fwd.from[i])];
      }
    }
    act_t_.push_back(dev.alloc(h * rows * e));
    upload(dev, act_t_.back(), xt, p_.dtype);
    fwd = forward(fwd, perm_[static_cast<std::size_t>(l)], sign_[static_cast<std::size_t>(l)]);
  }

  act_grad_.clear();
  for (int l = 0; l <= p_.layers; ++l) act_grad_.push_back(dev.alloc(rows * h * e));
  upload(dev, act_grad_.back(), g_out_, p_.dtype);

  grad_view_.clear();
  grads_ = dev.alloc(static_cast<std::size_t>(p_.layers) * h * h * e);
  for (int l = 0; l < p_.layers; ++l) grad_view_.push_back(window(grads_, grad_offset(l) * e, h * h * e));
  poison_gradients(dev);
}

void DpStepWorkload::poison_gradients(Device& dev) {
  dev.poison(grads_.data(), grads_.bytes());  // NaN: a gradient that no matmul or allreduce wrote cannot verify
}

void DpStepWorkload::reduce(CaseContext& ctx, const Bucket& b) {
  ctx.dev.use_lane(Lane::comm);
  const int t = ctx.phases ? ctx.phases->begin(kTransferPhase) : -1;
  void* g = static_cast<char*>(grads_.data()) + b.offset * dtype_size(p_.dtype);
  ctx.data().allreduce(g, g, b.count, p_.dtype);  // in place, as DDP reduces its bucket
  if (ctx.phases) ctx.phases->end(t);
  ctx.dev.use_lane(Lane::compute);
}

void DpStepWorkload::run_sample(CaseContext& ctx) {
  Device& dev = ctx.dev;
  PhaseLog* log = ctx.phases;
  const GemmShape forward{p_.batch, p_.hidden, p_.hidden};      // X_l W_l, and G_{l+1} W_l^T
  const GemmShape weight_grad{p_.hidden, p_.hidden, p_.batch};  // X_l^T G_{l+1}
  const GemmImpl impl = GemmImpl::vendor;
  dev.use_lane(Lane::compute);
  for (std::size_t l = 0; l < w_.size(); ++l) {
    const int c = log ? log->begin(kComputePhase) : -1;
    dev.gemm(impl, p_.dtype, forward, act_[l], w_[l], act_[l + 1]);
    if (log) log->end(c);
  }
  auto bucket = buckets_.begin();
  for (int l = p_.layers - 1; l >= 0; --l) {
    const auto i = static_cast<std::size_t>(l);
    const int c = log ? log->begin(kComputePhase) : -1;
    dev.gemm(impl, p_.dtype, forward, act_grad_[i + 1], wt_[i], act_grad_[i]);
    dev.gemm(impl, p_.dtype, weight_grad, act_t_[i], act_grad_[i + 1], grad_view_[i]);
    if (log) log->end(c);
    if (p_.overlap && l == bucket->low) {
      dev.wait(Lane::comm, Lane::compute);  // this bucket's gradients are done; the backward goes on meanwhile
      reduce(ctx, *bucket++);
    }
  }
  if (!p_.overlap) {
    dev.wait(Lane::comm, Lane::compute);
    for (const Bucket& b : buckets_) reduce(ctx, b);
  }
  dev.use_lane(Lane::compute);
}

double DpStepWorkload::flops_per_sample() const {
  return 3.0 * p_.layers * 2.0 * p_.batch * static_cast<double>(square());
}

double DpStepWorkload::bytes_per_sample() const {
  return static_cast<double>(p_.layers) * static_cast<double>(square() * dtype_size(p_.dtype));
}

// One more step afresh (its gradients start as NaN), then every element of
// every reduced gradient against the exact sum. The weights permute and sign
// columns, so X_l and G_{l+1} are X_0 and G_layers with their columns
// rearranged, and dW_l[i][j] = s_i t_j M[p_i][q_j] with M = X_0^T G_layers:
// one reference matmul on the host for all layers.
Verification DpStepWorkload::verify(CaseContext& ctx) {
  Device& dev = ctx.dev;
  poison_gradients(dev);
  CaseContext step = ctx;
  step.phases = nullptr;  // not a timed sample
  dev.use_lane(Lane::compute);
  dev.wait(Lane::comm, Lane::compute);
  run_sample(step);
  dev.join_lanes();
  ctx.synchronize();

  const auto h = static_cast<std::size_t>(p_.hidden), rows = static_cast<std::size_t>(p_.batch);
  std::vector<unsigned char> bytes(grads_.bytes());
  dev.copy_to_host(bytes.data(), grads_, bytes.size());
  std::vector<double> got(static_cast<std::size_t>(p_.layers) * h * h);
  decode(bytes.data(), got.size(), p_.dtype, got.data());

  std::vector<double> m(h * h, 0.0);
  for (std::size_t b = 0; b < rows; ++b) {
    for (std::size_t i = 0; i < h; ++i) {
      const double x = x0_[b * h + i];
      if (x == 0) continue;
      const double* g = &g_out_[b * h];
      double* row = &m[i * h];
      for (std::size_t j = 0; j < h; ++j) row[j] += x * g[j];
    }
  }
  // Column maps of X_l (forward from X_0) and of G_{l+1} (backward from G_layers).
  std::vector<ColumnMap> x_map{identity_map(p_.hidden)};
  for (std::size_t l = 0; l + 1 < perm_.size(); ++l) x_map.push_back(forward(x_map.back(), perm_[l], sign_[l]));
  const double ranks_sum = 0.5 * size_ * (size_ + 1.0);
  Verification v;
  ColumnMap g_map = identity_map(p_.hidden);  // of G_{l+1}
  for (int l = p_.layers - 1; l >= 0; --l) {
    const ColumnMap& xm = x_map[static_cast<std::size_t>(l)];
    const double* dw = &got[grad_offset(l)];
    for (std::size_t i = 0; i < h; ++i) {
      const double* mrow = &m[static_cast<std::size_t>(xm.from[i]) * h];
      for (std::size_t j = 0; j < h; ++j) {
        const double want = ranks_sum * xm.sign[i] * g_map.sign[j] * mrow[g_map.from[j]];
        if (!(dw[i * h + j] == want)) ++v.wrong_elements;
      }
    }
    g_map = backward(g_map, perm_[static_cast<std::size_t>(l)], sign_[static_cast<std::size_t>(l)]);
  }
  v.max_error = static_cast<double>(v.wrong_elements);
  v.tolerance = 0.0;
  v.ok = v.wrong_elements == 0;
  return v;
}

std::string DpStepWorkload::note(const CaseContext& ctx) const {
  if (ctx.dev.info().kind == Backend::cuda && ctx.group && ctx.group->data && ctx.data().kind() == CommKind::mpi) {
    return "comm = mpi on the CUDA backend: each allreduce's host step waits for the whole device, so the "
           "backward and the allreduces cannot overlap";
  }
  return cpu_lanes_note(ctx.dev, "compute and comm");
}

int DpStepWorkload::turn(const CaseContext& ctx, int) const { return ctx.group->index; }

}  // namespace gpuscale
