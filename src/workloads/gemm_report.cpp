#include "workloads/gemm_report.hpp"

namespace gpuscale {

namespace {

// A verified gemm row with its problem: its parameters but impl and ops (GFLOP/s is per matmul).
struct GemmRow {
  ReportRow* row;
  bool vendor;
  Params problem;
};

std::vector<GemmRow> gemm_rows(std::vector<ReportRow>& rows) {
  std::vector<GemmRow> gemms;
  for (auto& r : rows) {
    if (r.workload == "gemm" && r.status == CaseStatus::ok && r.gflops && r.params.has("impl")) {
      gemms.push_back({&r, r.params.get_string("impl") == "vendor", r.params.without({"impl", "ops"})});
    }
  }
  return gemms;
}

// The vendor row `g` is measured against: same file, mode, ranks, nodes and problem; of its experiment if any.
const ReportRow* vendor_of(const GemmRow& g, const std::vector<GemmRow>& gemms) {
  const ReportRow& r = *g.row;
  const ReportRow* vendor = nullptr;
  for (const auto& v : gemms) {
    if (v.vendor && v.row->file == r.file && v.row->mode == r.mode && v.row->ranks == r.ranks &&
        v.row->nodes == r.nodes && v.problem == g.problem &&
        (!vendor || (v.row->name == r.name && vendor->name != r.name))) {
      vendor = v.row;
    }
  }
  return vendor;
}

class GemmAnalysis : public RowAnalysis {
 public:
  void relate(std::vector<ReportRow>& rows) const override {
    const std::vector<GemmRow> gemms = gemm_rows(rows);
    for (const auto& g : gemms) {
      if (g.vendor) continue;
      const ReportRow* vendor = vendor_of(g, gemms);
      if (!vendor) continue;
      ReportRow& r = *g.row;
      r.figures.push_back({"of_vendor", *r.gflops / *vendor->gflops, FigureKind::share, "of vendor", ""});
      r.figures.push_back({"vendor_case", static_cast<double>(vendor->case_index), FigureKind::case_number, "", ""});
      r.notes.push_back("of vendor: GFLOP/s per rank over that of impl vendor (" +
                        std::string(r.backend == Backend::cpu ? "OpenBLAS" : "cuBLAS") +
                        ") for the same dtype, shape, mode and ranks in this run");
      if (vendor->name != r.name) {
        r.notes.push_back("case " + std::to_string(r.case_index + 1) + ": of vendor against case " +
                          std::to_string(vendor->case_index + 1) + " (" + vendor->name + ")");
      }
    }
  }
};

}  // namespace

const RowAnalysis& gemm_analysis() {
  static const GemmAnalysis a;
  return a;
}

}  // namespace gpuscale
