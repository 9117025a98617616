#include "workloads/pipeline.hpp"
#include "workloads/gemm.hpp"
#include "workloads/overlap_report.hpp"
#include "workloads/typed_workload.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace gpuscale {

namespace {

constexpr double kMaxPipelineOps = 1048576;  // 2^20

WorkloadSchema pipeline_schema() {
  WorkloadSchema s;
  s.name = "pipeline";
  s.description = "`ops` matmuls, each result copied to the host on another stream: compute/transfer overlap";
  s.params = gemm_problem_specs(512, "fp64");
  // Each op keeps its own result on the device and in host memory, and marks two phase intervals (an int index).
  s.params.push_back({"ops", ParamType::Int, "matmuls (and copies of their results) per timed sample",
                      Value{std::int64_t{8}}, 1, {}, kMaxPipelineOps});
  s.params.push_back({"overlap", ParamType::Bool,
                      "true: copy each result while the next matmul runs | false: all matmuls, then all copies",
                      Value{true}, 0, {}});
  s.params.push_back({"host", ParamType::String, "host memory the results go to: pinned | pageable",
                      Value{std::string("pinned")}, 0, {"pinned", "pageable"}});
  return s;
}

class PipelineType final : public TypedWorkloadType<PipelineParams> {
 public:
  PipelineType() : TypedWorkloadType(pipeline_schema()) {}
  PipelineParams parse(const Params& p) const override { return PipelineParams::from(p); }
  const RowAnalysis* analysis() const override { return &overlap_analysis(); }
  std::vector<Params> examples() const override {
    return example_params(schema(), {"size = 64\nops = 5",
                                     "m = 48\nn = 40\nk = 30\nops = 3\ndtype = \"fp32\"\noverlap = false"});
  }
  Params small(const Params& p) const override { return gemm_small(p); }

 private:
  std::unique_ptr<Workload> make_for(const PipelineParams& p) const override {
    return std::make_unique<PipelineWorkload>(p);
  }
  std::string unsupported_for(const PipelineParams& p, const RunTarget& target) const override {
    return gemm_problem_unsupported(p.problem, target.backend);
  }
  MemoryNeed memory_for(const PipelineParams& p, bool buffers_on_host) const override;
  CaseWork work_for(const PipelineParams& p, const JobShape& job) const override;
};

// The operands, and a C per matmul on the device and in host memory.
MemoryNeed PipelineType::memory_for(const PipelineParams& p, bool) const {
  const GemmProblem& g = p.problem;
  MemoryNeed need = gemm_operands_memory(g);
  const double results = static_cast<double>(p.ops) * g.shape.m * static_cast<double>(g.shape.n) *
                         static_cast<double>(dtype_size(g.dtype));
  need.device_bytes += results;
  need.host_bytes += results;
  return need;
}

CaseWork PipelineType::work_for(const PipelineParams& p, const JobShape& job) const {
  SampleWork w;
  const GemmProblem& g = p.problem;
  const double ops = static_cast<double>(p.ops);
  w.add_gemm(g, ops);
  w.add_copy(CopyKind::d2h, p.pinned,
             ops * g.shape.m * static_cast<double>(g.shape.n) * static_cast<double>(dtype_size(g.dtype)), ops);
  w.overlapped = p.overlap;
  return local_case_work(w, job);
}

}  // namespace

PipelineParams PipelineParams::from(const Params& p) {
  return {gemm_problem(p), p.get_int("ops"), p.get_bool("overlap"), p.get_string("host") == "pinned"};
}

const WorkloadType& pipeline_type() {
  static const PipelineType type;
  return type;
}

PipelineWorkload::PipelineWorkload(const PipelineParams& p)
    : problem_(p.problem), ops_(p.ops), overlap_(p.overlap), pinned_(p.pinned) {}

std::size_t PipelineWorkload::c_bytes() const {
  return static_cast<std::size_t>(problem_.shape.m) * problem_.shape.n * dtype_size(problem_.dtype);
}

void PipelineWorkload::setup(CaseContext& ctx, std::uint64_t seed) {
  Device& dev = ctx.dev;
  operands_.setup(dev, problem_, seed);
  c_.clear();
  host_.clear();
  for (std::int64_t i = 0; i < ops_; ++i) {
    c_.push_back(dev.alloc(c_bytes()));
    host_.push_back(dev.alloc_host(c_bytes(), pinned_));
    // NaN until a result lands: a copy that never happened cannot verify.
    std::memset(host_.back().data(), 0xFF, c_bytes());
  }
}

void PipelineWorkload::run_sample(CaseContext& ctx) {
  Device& dev = ctx.dev;
  PhaseLog* log = ctx.phases;
  auto begin = [log](const char* phase) { return log ? log->begin(phase) : -1; };
  auto end = [log](int interval) {
    if (log) log->end(interval);
  };
  auto multiply = [&](std::size_t i) {
    dev.use_lane(Lane::compute);
    const int m = begin(kComputePhase);
    operands_.multiply_into(dev, c_[i]);
    end(m);
  };
  auto copy_out = [&](std::size_t i) {
    dev.use_lane(Lane::copy);
    const int t = begin(kTransferPhase);
    dev.copy_async(host_[i].data(), c_[i].data(), c_bytes(), CopyKind::d2h);
    end(t);
  };
  const auto n = static_cast<std::size_t>(ops_);
  if (overlap_) {
    for (std::size_t i = 0; i < n; ++i) {
      multiply(i);
      dev.wait(Lane::copy, Lane::compute);  // this result is ready; the next matmul goes on meanwhile
      copy_out(i);
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) multiply(i);
    dev.wait(Lane::copy, Lane::compute);
    for (std::size_t i = 0; i < n; ++i) copy_out(i);
  }
  dev.use_lane(Lane::compute);
}

double PipelineWorkload::flops_per_sample() const { return static_cast<double>(ops_) * problem_.flops(); }

double PipelineWorkload::bytes_per_sample() const { return static_cast<double>(ops_) * static_cast<double>(c_bytes()); }

Verification PipelineWorkload::verify(CaseContext& ctx) {
  ctx.dev.synchronize();
  Verification all;
  all.ok = true;
  for (const auto& h : host_) {
    const Verification v = operands_.verify_host(h.data());
    all.tolerance = v.tolerance;
    all.ok = all.ok && v.ok;
    all.max_error = std::max(all.max_error, std::isnan(v.max_error) ? INFINITY : v.max_error);
  }
  return all;
}

std::string PipelineWorkload::note(const CaseContext& ctx) const {
  return cpu_lanes_note(ctx.dev, "compute and copy");
}

}  // namespace gpuscale
