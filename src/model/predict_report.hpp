// The rows `gpuscale predict` prints: each case's prediction on the target
// job, the speedup of serial/parallel twins, and with --against the measured
// numbers beside them and the error; as a table or JSON (docs/model.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/intervals.hpp"
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
  // measured / predicted: op time for transfers, else the median (8.04: measured took 8.04x the prediction)
  std::optional<double> ratio;
  std::optional<bool> inside;  // the measured value lies in the prediction's 95% interval (none: no interval)
};

// The one time a row is judged by: a transfer's op time, else its median sample; and its interval.
double predicted_time(const Prediction& p);
Interval predicted_interval(const Prediction& p);

std::vector<PredictRow> predict_rows(const Model& m, const std::vector<ModelCase>& cases, const PredictJob& job);

// Sets each row's `measured` (matched by experiment, workload, mode and parameters), `ratio` and `inside`; the
// number of rows matched.
std::size_t add_measured(std::vector<PredictRow>& rows, const std::vector<ReportRow>& measured);

// measured / predicted per workload (and per op for transfers) over the rows measured: median, least and most, and
// how many measured values lay inside their interval, of how many had one.
struct ErrorSummary {
  std::string what;  // "collective allreduce", "gemm"; "all" for the total
  int cases = 0;
  double median = 0, min = 0, max = 0;
  int inside = 0, with_interval = 0;
};
std::vector<ErrorSummary> error_summary(const std::vector<PredictRow>& rows);
ErrorSummary total_summary(const std::vector<PredictRow>& rows);

// "8.04x", and the signed error "+704%" = measured / predicted - 1.
std::string ratio_text(double ratio);
std::string signed_error_text(double ratio);

struct PredictHeader {
  std::string model_from;  // "model.json" or "f2.h5 f3.h5 (fitted now)"
  PredictJob job;
  std::string against;     // the measured file, "" none
  std::vector<std::string> noisy;  // fitted now: the noisy cases, "FILE cases 1-4 (why)", left out or fitted
  bool noisy_fitted = false;       // (--include-noisy)
  // --against a run measured noisy: "target t.h5: 6 of 6 case(s) measured noisy (oversubscribed: ...): the errors
  // below are not the model's alone", shown before them; "" for a quiet one.
  std::string target_noise;
};
std::string render_predict_table(const PredictHeader& h, const std::vector<PredictRow>& rows, bool breakdown);
std::string render_predict_json(const PredictHeader& h, const std::vector<PredictRow>& rows);

}  // namespace gpuscale
