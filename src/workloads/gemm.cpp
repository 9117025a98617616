#include "workloads/gemm.hpp"
#include "workloads/gemm_report.hpp"
#include "workloads/typed_workload.hpp"

#include <algorithm>

namespace gpuscale {

namespace {

WorkloadSchema gemm_schema() {
  WorkloadSchema s;
  s.name = "gemm";
  s.of_vendor = true;
  s.description = "C = A*B of one size, `ops` matmuls per timed sample";
  s.params = gemm_problem_specs(512, "fp64");
  s.params.push_back({"ops", ParamType::Int, "matmuls per timed sample", Value{std::int64_t{1}}, 1, {}, kMaxCount});
  s.params.push_back(graph_param());
  return s;
}

class GemmType final : public TypedWorkloadType<GemmParams> {
 public:
  GemmType() : TypedWorkloadType(gemm_schema()) {}
  GemmParams parse(const Params& p) const override { return GemmParams::from(p); }
  // The problem's, then the graph key's (which the runner reads, not the workload).
  std::string unsupported(const Params& p, const RunTarget& target) const override {
    const std::string why = gemm_problem_unsupported(parse(p).problem, target.backend);
    return why.empty() ? graph_unsupported(p, target) : why;
  }
  const RowAnalysis* analysis() const override { return &gemm_analysis(); }
  std::vector<Params> examples() const override {
    return example_params(schema(), {"size = 96\nops = 2", "m = 64\nn = 32\nk = 200\ndtype = \"fp32\"",
                                     "m = 300\nn = 20\nk = 10"});
  }
  Params small(const Params& p) const override { return gemm_small(p); }

 private:
  std::unique_ptr<Workload> make_for(const GemmParams& g) const override { return std::make_unique<GemmWorkload>(g); }
  MemoryNeed memory_for(const GemmParams& g, bool) const override { return gemm_operands_memory(g.problem); }
  CaseWork work_for(const GemmParams& g, const JobShape& job) const override {
    SampleWork w;
    w.add_gemm(g.problem, static_cast<double>(g.ops));
    return local_case_work(w, job);
  }
};

}  // namespace

GemmParams GemmParams::from(const Params& p) { return {gemm_problem(p), p.get_int("ops")}; }

const WorkloadType& gemm_type() {
  static const GemmType type;
  return type;
}

Params gemm_small(const Params& p) {
  Params out = p;
  for (const char* key : {"m", "n", "k"}) {
    if (out.has(key)) out.set(key, std::int64_t{768});
  }
  out.set("size", std::int64_t{768});
  if (out.has("ops")) out.set("ops", std::min<std::int64_t>(out.get_int("ops"), 4));
  return out;
}

void GemmWorkload::run_sample(CaseContext& ctx) {
  for (std::int64_t i = 0; i < ops_; ++i) operands_.multiply(ctx.dev);
}

double GemmWorkload::flops_per_sample() const { return static_cast<double>(ops_) * problem_.flops(); }

double GemmWorkload::bytes_per_sample() const {
  const GemmShape s = problem_.shape;
  const double e = static_cast<double>(dtype_size(problem_.dtype));
  return static_cast<double>(ops_) * e * (double(s.m) * s.k + double(s.k) * s.n + double(s.m) * s.n);
}

}  // namespace gpuscale
