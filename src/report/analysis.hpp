// What a workload adds to the report, beside what every case has (medians,
// intervals, speedup, stragglers, baseline, limits): figures and notes of
// its own rows, and what its rows say about each other. A workload's
// analysis lives in its own files (src/workloads/), listed by the registry.
#pragma once

#include <string>
#include <vector>

#include "io/result_model.hpp"
#include "report/report.hpp"

namespace gpuscale {

struct RowAnalysis {
  virtual ~RowAnalysis() = default;
  // Adds to `r`, the row of one of the workload's cases `c` that ran (not skipped).
  virtual void row(const RunRecord& run, const CaseRecord& c, const RowSettings& s, ReportRow& r) const {
    (void)run, (void)c, (void)s, (void)r;
  }
  // Relates the workload's rows to each other (every row of the report is in
  // `rows`, of any file); before the report pairs serial and parallel rows.
  virtual void relate(std::vector<ReportRow>& rows) const { (void)rows; }
  // The table's text for one experiment's rows (all of this workload, one
  // file), in place of the block every experiment gets; "" keeps that block.
  virtual std::string block(const std::vector<const ReportRow*>& rows) const {
    (void)rows;
    return "";
  }
};

// The analysis of the workload of that name; null when it adds nothing or is
// unknown. Defined by the workload registry (workloads/registry.cpp).
const RowAnalysis* analysis_of(const std::string& workload);

// A case's parameters as its workload's schema types them: files store a
// boolean as 0/1 (HDF5 has none), so every view would print `inplace=0`
// where the run printed `inplace=false`. Keys the schema does not know, and
// unknown workloads, keep their stored value. Defined by the registry.
Params typed_params(const std::string& workload, const Params& stored);

}  // namespace gpuscale
