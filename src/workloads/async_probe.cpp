#include "workloads/async_probe.hpp"

#include <cmath>
#include <cstring>

#include "device/ops/sum_squares.hpp"
#include "workloads/gemm.hpp"
#include "workloads/typed_workload.hpp"

namespace gpuscale {

namespace {

WorkloadSchema async_schema() {
  WorkloadSchema s;
  s.name = "async";
  s.description = "host enqueue time vs completed time of `ops` small matmuls, with host syncs or norm logging";
  s.params = gemm_problem_specs(64, "fp32");
  s.params.push_back({"ops", ParamType::Int, "matmuls per timed sample", Value{std::int64_t{100}}, 1, {}, kMaxCount});
  s.params.push_back({"sync", ParamType::String, "end: one sync per sample | each: after every op",
                      Value{std::string("end")}, 0, {"end", "each"}});
  s.params.push_back({"log_norm", ParamType::String, "none | host: copy the norm out every op | device: once",
                      Value{std::string("none")}, 0, {"none", "host", "device"}});
  s.params.push_back(graph_param());
  return s;
}

class AsyncType final : public TypedWorkloadType<AsyncProbeParams> {
 public:
  AsyncType() : TypedWorkloadType(async_schema()) {}
  AsyncProbeParams parse(const Params& p) const override { return AsyncProbeParams::from(p); }
  std::string unsupported(const Params& p, const RunTarget& target) const override;
  std::vector<Params> examples() const override {
    return example_params(schema(), {"size = 80\nops = 3\nlog_norm = \"device\"",
                                     "m = 40\nn = 90\nk = 20\nops = 2\nlog_norm = \"host\"\nsync = \"each\""});
  }
  Params small(const Params& p) const override { return gemm_small(p); }

 private:
  std::unique_ptr<Workload> make_for(const AsyncProbeParams& a) const override {
    return std::make_unique<AsyncProbeWorkload>(a);
  }
  // The operands' (the norm's few bytes left out).
  MemoryNeed memory_for(const AsyncProbeParams& a, bool) const override { return gemm_operands_memory(a.problem); }
  CaseWork work_for(const AsyncProbeParams& a, const JobShape& job) const override;
};

// Its matmuls are gemm's, and so is its graph; a graph cannot hold the host's waits.
std::string AsyncType::unsupported(const Params& p, const RunTarget& target) const {
  if (std::string why = gemm_type().unsupported(p, target); !why.empty()) return why;
  const AsyncProbeParams a = parse(p);
  if (a.graph && (a.sync_each || a.log_norm == "host")) {
    return "graph = true cannot record sync = \"each\" or log_norm = \"host\": the host waits for the device "
           "inside the sample";
  }
  return "";
}

CaseWork AsyncType::work_for(const AsyncProbeParams& a, const JobShape& job) const {
  SampleWork w;
  const GemmProblem& g = a.problem;
  const double ops = static_cast<double>(a.ops);
  w.add_gemm(g, ops);
  if (a.log_norm != "none") {  // sum_squares over C after each matmul
    w.add_stream(kPass, ops * g.shape.m * static_cast<double>(g.shape.n) * static_cast<double>(dtype_size(g.dtype)),
                 ops);
  }
  if (a.log_norm == "host") w.host_waits += ops;
  if (a.sync_each) w.host_waits += ops;
  return local_case_work(w, job);
}

}  // namespace

AsyncProbeParams AsyncProbeParams::from(const Params& p) {
  return {gemm_problem(p), p.get_int("ops"), p.get_string("sync") == "each", p.get_string("log_norm"), uses_graph(p)};
}

const WorkloadType& async_type() {
  static const AsyncType type;
  return type;
}

AsyncProbeWorkload::AsyncProbeWorkload(const AsyncProbeParams& p)
    : problem_(p.problem), ops_(p.ops), sync_each_(p.sync_each), log_norm_(p.log_norm) {}

void AsyncProbeWorkload::setup(CaseContext& ctx, std::uint64_t seed) {
  Device& dev = ctx.dev;
  operands_.setup(dev, problem_, seed);
  acc_ = dev.alloc(sizeof(double));
  acc_host_ = dev.alloc_host(sizeof(double), true);
  // NaN until a norm lands: pinned memory handed back from an earlier case
  // may hold the very value this case should produce.
  const double nan = std::nan("");
  std::memcpy(acc_host_.data(), &nan, sizeof nan);
  last_norm_sq_ = nan;
}

void AsyncProbeWorkload::run_sample(CaseContext& ctx) {
  Device& dev = ctx.dev;
  const std::size_t count = operands_.c_count();
  for (std::int64_t i = 0; i < ops_; ++i) {
    operands_.multiply(dev);
    if (log_norm_ == "host") {
      sum_squares(dev, problem_.dtype, operands_.c(), count, acc_, false);
      dev.copy_async(acc_host_.data(), acc_.data(), sizeof(double), CopyKind::d2h);
      dev.synchronize();  // the host needs the value now: this is the stall
      std::memcpy(&last_norm_sq_, acc_host_.data(), sizeof(double));
    } else if (log_norm_ == "device") {
      sum_squares(dev, problem_.dtype, operands_.c(), count, acc_, i > 0);
    }
    if (sync_each_) dev.synchronize();
  }
  if (log_norm_ == "device") dev.copy_async(acc_host_.data(), acc_.data(), sizeof(double), CopyKind::d2h);
}

double AsyncProbeWorkload::flops_per_sample() const { return static_cast<double>(ops_) * problem_.flops(); }

Verification AsyncProbeWorkload::verify(CaseContext& ctx) {
  Device& dev = ctx.dev;
  long double c_sum_squares = 0.0L;
  Verification v = operands_.verify(dev, &c_sum_squares);  // synchronizes: C is copied back
  if (log_norm_ == "none") return v;
  double seen = last_norm_sq_;
  double times = 1.0;
  if (log_norm_ == "device") {
    std::memcpy(&seen, acc_host_.data(), sizeof(double));
    times = static_cast<double>(ops_);  // every op adds the same C's squared norm
  }
  const long double want = times * c_sum_squares;
  const double rel = want > 0 ? static_cast<double>(std::fabs(seen - want) / want) : std::fabs(seen);
  constexpr double kNormTolerance = 1e-9;  // sums of squares accumulate in double on every backend
  if (!(rel <= kNormTolerance)) {
    v.ok = false;
    v.max_error = std::isnan(rel) ? INFINITY : std::max(v.max_error, rel);
  }
  return v;
}

}  // namespace gpuscale
