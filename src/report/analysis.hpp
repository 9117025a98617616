// What a workload adds to the report, beside what every case has (medians,
// intervals, speedup, stragglers, baseline, limits): figures and notes of
// its own rows, what its rows say about each other, and options of its own
// that `gpuscale report` offers. A workload's analysis lives in its own files
// (src/workloads/), listed by the registry.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "io/result_model.hpp"
#include "report/report.hpp"

namespace gpuscale {

// A number option of `gpuscale report` that a workload's analysis declares
// (RowAnalysis::options); the report command offers it, checks it and hands
// its value to every row's analysis (RowSettings).
struct ReportOption {
  std::string flag;       // as on the command line: "--name"
  std::string help;       // its text in `report --help`
  double default_value = 0.0;
  double lo = 0.0, hi = 1.0;  // a value must be above lo and at most hi
  std::string type_name;  // what --help shows for the value ("SHARE")
  std::string must;       // the error's "must be MUST, got TEXT" for a value outside them
  std::string example;    // a line of `report --help`'s examples, after "gpuscale report " ("" none)
  bool accepts(double v) const { return v > lo && v <= hi; }
};

// What the report's options say to every row's analysis.
struct RowSettings {
  double straggler_threshold = kStragglerThreshold;
  bool breakdown = true;  // rows carry the measured breakdown (JSON, CSV and --breakdown show it; the table not)
  std::map<std::string, double> options;  // workloads' report options by flag, where set
  // The value of option `o`: as set, else its default.
  double value(const ReportOption& o) const {
    const auto it = options.find(o.flag);
    return it == options.end() ? o.default_value : it->second;
  }
};

struct RowAnalysis {
  virtual ~RowAnalysis() = default;
  // The report options of the workload's own (none by default).
  virtual std::vector<ReportOption> options() const { return {}; }
  // Whether a transfer case `c` times one operation, repeated, so that its rates are nccl-tests' (op time, algbw,
  // busbw); false: bytes or flops per sample over its time, as a case without a scope.
  virtual bool times_one_operation(const CaseRecord& c) const {
    (void)c;
    return true;
  }
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

// What the report needs of the workloads, which come after it in the include
// order: each one's analysis, and a case's parameters as its schema types
// them. The workload registry sets them as the program starts
// (workloads/registry.cpp); unset, no workload adds anything and parameters
// read as stored.
struct WorkloadLookup {
  const RowAnalysis* (*analysis)(const std::string& workload) = nullptr;
  Params (*typed_params)(const std::string& workload, const Params& stored) = nullptr;
};
void set_workload_lookup(const WorkloadLookup& lookup);

// The analysis of the workload of that name; null when it adds nothing or is
// unknown.
const RowAnalysis* analysis_of(const std::string& workload);

// Each case's row under the report's options: the straggler threshold and the workloads' own (report_row and
// build_report of report.hpp with their defaults).
ReportRow report_row(const RunRecord& run, const CaseRecord& c, const RowSettings& settings);
std::vector<ReportRow> build_report(const RunRecord& run, const RowSettings& settings);

// A case's parameters as its workload's schema types them: files store a
// boolean as 0/1 (HDF5 has none), so every view would print `inplace=0`
// where the run printed `inplace=false`. Keys the schema does not know, and
// unknown workloads, keep their stored value.
Params typed_params(const std::string& workload, const Params& stored);

}  // namespace gpuscale
