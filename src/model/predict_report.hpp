// The rows `gpuscale predict` prints: each case's prediction on the target
// job, the speedup of serial/parallel twins, and with --against the measured
// numbers beside them and the error; as a table or JSON (docs/model.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/predict.hpp"
#include "report/report.hpp"

namespace gpuscale {

struct PredictRow {
  std::size_t number = 0;  // the case's number in the config or the model's cases, from 1
  ModelCase c;
  Prediction p;
  std::optional<double> speedup, efficiency;  // parallel rows with a serial twin: its median / this one's
  // --against: the same case in the measured file.
  std::optional<ReportRow> measured;
  std::optional<double> error;  // |measured - predicted| / measured: op time for transfers, else the median
};

std::vector<PredictRow> predict_rows(const Model& m, const std::vector<ModelCase>& cases, const PredictJob& job);

// Sets each row's `measured` (matched by experiment, workload, mode and parameters) and `error`.
void add_measured(std::vector<PredictRow>& rows, const std::vector<ReportRow>& measured);

// Median and largest error per workload (and per op for transfers) over the rows measured.
struct ErrorSummary {
  std::string what;  // "collective allreduce", "gemm"
  int cases = 0;
  double median = 0, max = 0;
};
std::vector<ErrorSummary> error_summary(const std::vector<PredictRow>& rows);

struct PredictHeader {
  std::string model_from;  // "model.json" or "f2.h5 f3.h5 (fitted now)"
  PredictJob job;
  std::string against;     // the measured file, "" none
};
std::string render_predict_table(const PredictHeader& h, const std::vector<PredictRow>& rows, bool breakdown);
std::string render_predict_json(const PredictHeader& h, const std::vector<PredictRow>& rows);

}  // namespace gpuscale
