#include "workloads/distributed_gemm_report.hpp"

#include "workloads/overlap_report.hpp"

namespace gpuscale {

namespace {

class DistributedGemmAnalysis : public RowAnalysis {
 public:
  void row(const RunRecord&, const CaseRecord& c, const RowSettings&, ReportRow& r) const override {
    add_overlap_figures(c, r);
  }
  void relate(std::vector<ReportRow>& rows) const override {
    for (auto& p : rows) {
      const bool split = p.params.has("group_size") && p.params.get_int("group_size") >= 2;
      if (p.status == CaseStatus::skipped || !split) continue;
      Params one = p.params;
      one.set("group_size", std::int64_t{1});
      for (const auto& b : rows) {
        if (b.status != CaseStatus::skipped && b.name == p.name && b.mode == p.mode && b.params == one &&
            b.ranks == p.ranks && b.nodes == p.nodes) {
          set_speedup(p, b, static_cast<double>(p.params.get_int("group_size")));
          p.notes.push_back("case " + std::to_string(p.case_index + 1) + ": speedup and eff against case " +
                            std::to_string(b.case_index + 1) + " (group_size = 1), eff = speedup / group_size");
          break;
        }
      }
    }
  }
};

}  // namespace

const RowAnalysis& distributed_gemm_analysis() {
  static const DistributedGemmAnalysis a;
  return a;
}

}  // namespace gpuscale
