#include "workloads/gemm.hpp"


namespace gpuscale {

WorkloadSchema gemm_schema() {
  WorkloadSchema s;
  s.name = "gemm";
  s.description = "C = A*B of one size, `ops` matmuls per timed sample";
  s.params = gemm_problem_specs(512, "fp64");
  s.params.push_back({"ops", ParamType::Int, "matmuls per timed sample", Value{std::int64_t{1}}, 1, {}, kMaxCount});
  s.params.push_back(graph_param());
  return s;
}

MemoryNeed gemm_memory(const Params& p) { return gemm_operands_memory(gemm_problem(p)); }

void GemmWorkload::run_sample(CaseContext& ctx) {
  for (std::int64_t i = 0; i < ops_; ++i) operands_.multiply(ctx.dev);
}

double GemmWorkload::flops_per_sample() const { return static_cast<double>(ops_) * problem_.flops(); }

double GemmWorkload::bytes_per_sample() const {
  const GemmShape s = problem_.shape;
  const double e = static_cast<double>(dtype_size(problem_.dtype));
  return static_cast<double>(ops_) * e * (double(s.m) * s.k + double(s.k) * s.n + double(s.m) * s.n);
}

CaseWork gemm_work(const Params& p, const JobShape& job) {
  SampleWork w;
  w.add_gemm(gemm_problem(p), static_cast<double>(p.get_int("ops")));
  return local_case_work(w, job);
}

}  // namespace gpuscale
