// A model's prediction of one case on a job of another shape (gpuscale
// predict, check --model): its median sample time with an interval, its op
// time and busbw for transfers, where the time goes, and which terms went
// beyond what the files measured.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/model.hpp"
#include "report/breakdown.hpp"
#include "workloads/work.hpp"

namespace gpuscale {

// What a transfer fit's points span: the most ranks and nodes, the fewest and most bytes, the terms measured.
struct TransferSpan {
  std::size_t points = 0;  // of the fit it was worked out from
  int ranks = 0, nodes = 0;
  double lo_bytes = 0, hi_bytes = 0;
  std::array<bool, kTransferTerms> measured{};  // some point had steps or bytes of the term
  std::vector<std::pair<int, int>> shapes;      // the groups' (ranks, nodes) measured, each once, in order
};

// A prediction more than this factor beyond what the files measured (ranks, nodes, bytes, flops per call) gets no
// interval: the model's shape may not hold that far, and nothing in the files says how far off it may be.
constexpr double kFarBeyond = 2.0;
TransferSpan transfer_span(const TransferFit& f);

struct PredictJob {
  JobShape shape;
  Backend backend = Backend::cpu;  // the target's; the model's first file's by default
  std::optional<CommKind> comm;
  // The MPI library the target runs and its settings (the model's first file's by default, the target file's with
  // --against): what picks its collective algorithms (mpi_algorithm.hpp).
  std::string mpi_library;
  MpiSettings mpi_settings;
  // Of each transfer fit of the model predict_job had, in its order: worked out once, as a model of many cases has
  // as many points, and going through them for every case would make predict quadratic in the cases.
  std::vector<TransferSpan> spans;
};
// The job `ranks` x `nodes` on the backend and data plane of the model's first file, with its nodes' cores.
PredictJob predict_job(const Model& m, int ranks, int nodes);

struct Prediction {
  std::string unpredictable;  // why the model cannot predict the case ("" when it can)
  std::string skip_reason;    // why the job skips the case ("" when it runs)
  int turns = 1;              // serial: turns one after another
  // The case's median sample (serial: the sum over turns; parallel: a rank's sample, no waiting), 95% interval
  // (lo_s, hi_s, op_lo_s, op_hi_s: only where no_interval is empty).
  double median_s = 0, lo_s = 0, hi_s = 0;
  std::optional<double> op_time_s, op_lo_s, op_hi_s, busbw_gbps;  // transfers of one kind only
  Breakdown parts;                                                 // of median_s
  std::vector<std::string> extrapolated;  // terms used beyond the fitted sizes and shapes, and terms taken as 0
  std::string no_interval;                // why the data cannot support an interval ("" when they can)
  std::vector<std::string> poor_fits;     // the fits it used whose error is above kPoorFitRms: "NAME: why"
  bool predicted() const { return unpredictable.empty() && skip_reason.empty(); }
  bool has_interval() const { return predicted() && no_interval.empty(); }
};

Prediction predict_case(const Model& m, const ModelCase& c, const PredictJob& job);

}  // namespace gpuscale
