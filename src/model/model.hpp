// A cost model fitted to measured result files (gpuscale model), and its
// predictions for a job of another shape (gpuscale predict, check --model).
// GEMM: time per call from a rate per core interpolated in log problem size;
// copies: latency + bytes / bandwidth per kind; transfers: per (backend, comm,
// op), alpha per step and seconds per wire byte, inside a node and between
// nodes, as NCCL's own tuning model (docs/model.md).
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "comm/data_comm.hpp"
#include "core/config.hpp"
#include "device/device.hpp"
#include "core/value.hpp"
#include "model/mpi_algorithm.hpp"

namespace gpuscale {

// Where a model's rates came from: one result file.
struct ModelSource {
  std::string path, date;
  Backend backend = Backend::cpu;
  std::optional<CommKind> comm;  // none: a file of schema 1.0 (no transfers)
  std::string device;
  int ranks = 1, nodes = 1, node_cores = 0;
  std::string mpi_library;   // MPI_Get_library_version's text ("" where the file has none)
  MpiSettings mpi_settings;  // what picks its collective algorithms (mpi_algorithm.hpp; empty in older files)
};

// A case of the files, for `predict MODEL.json` without a config.
struct ModelCase {
  std::string experiment, workload;
  Mode mode = Mode::parallel;
  Params params;
};

// One case the fit was made from, and how far it lies from the fit: its measured time over the fitted one.
struct Residual {
  std::string from;  // "FILE case N"
  double ratio = 1;  // measured / fitted
};

// Above this relative rms of its residuals a fit is poor, and says why it thinks so.
constexpr double kPoorFitRms = 0.25;

// How far the cases a fit was made from lie from it (its training error), and what a prediction's interval needs
// of it (docs/model.md, "Intervals").
struct FitError {
  int cases = 0;                 // the cases fitted
  int terms = 0;                 // the values fitted from them
  int files = 0;                 // the files (runs) the cases came from
  double rel_rms = 0;            // rms over the cases of (fitted - measured) / measured
  double log_se = 0;             // sqrt(sum ln(measured / fitted)^2 / (cases - terms)); 0 where no freedom is left
  std::vector<Residual> worst;   // the cases furthest from the fit, furthest first (at most kWorstKept)
  std::string poor;              // why the fit is poor ("" when rel_rms <= kPoorFitRms)
  int freedom() const { return cases - terms; }  // degrees of freedom of the residuals
};
constexpr std::size_t kWorstKept = 3;

// GEMM of one kind: seconds per call at measured sizes (flops per call), per core used.
struct GemmPoint {
  double flops = 0;          // per call
  double core_flops_s = 0;   // flops per second per core used (1 on a GPU)
  double rel_ci = 0;         // half the width of the median's 95% interval, relative to the median
  int cases = 1;             // the cases of this size (the rate is their median)
};
struct GemmCurve {
  Backend backend = Backend::cpu;
  std::string device, dtype, impl;
  std::vector<GemmPoint> points;  // by flops, one per size (the median of its cases)
  FitError error;                 // of each case's rate against its size's point; a term per size
};

// How a linear fit's terms move a prediction: (A^T A)^-1 of its rows each divided by the case's measured time
// (R's cov.unscaled, on relative residuals), over the terms it used (0 elsewhere). With FitError::log_se it gives
// the spread of a prediction's terms: leverage h = (x / t)^T C (x / t) at a row x predicted as t.
template <std::size_t N>
using Unscaled = std::array<std::array<double, N>, N>;

// Copies of one kind ("host-pinned", "host-pageable", "device", "pass"): seconds = calls x latency + bytes / rate.
struct CopyFit {
  Backend backend = Backend::cpu;
  std::string kind;
  double latency_s = 0, bytes_s = 0;
  double min_bytes = 0, max_bytes = 0;  // per call, the sizes fitted
  FitError error;
  Unscaled<2> cov_unscaled{};           // of (latency, seconds per byte)
};

// One measured transfer case: its shape and its time per operation.
struct TransferPoint {
  int ranks = 1, nodes = 1;  // of the group
  double bytes = 0;          // op bytes
  double op_s = 0;           // median over samples of the mean over ranks of busy time / operations
  std::string from;          // "FILE case N"
  std::string algorithm;     // what the file's MPI ran (mpi_algorithm.hpp); "" not known: the ring assumed
  std::string protocol;      // how it sent the largest message of a step: "eager", "rendezvous"; "" not known
};

// Time per operation = steps inside a node x alpha_intra + steps between
// nodes x alpha_inter + wire bytes x (g_intra on one node, g_inter across nodes).
constexpr int kTransferTerms = 4;
enum TransferTerm { kAlphaIntra, kAlphaInter, kSecPerByteIntra, kSecPerByteInter };
const char* transfer_term_name(int term);

struct TransferFit {
  Backend backend = Backend::cpu;
  CommKind comm = CommKind::mpi;
  std::string op;
  std::array<double, kTransferTerms> coef{};          // seconds, seconds per byte
  std::array<bool, kTransferTerms> fitted{};          // the files held data for the term
  std::array<std::array<double, kTransferTerms>, kTransferTerms> cov{};  // bootstrap covariance of coef
  Unscaled<kTransferTerms> cov_unscaled{};
  FitError error;
  std::vector<TransferPoint> points;
};

// How a fit is named to a user: "gemm fp64 (vendor, cpu)", "copies pass (cpu)", "allreduce over mpi (cpu)".
std::string fit_name(const GemmCurve& g);
std::string fit_name(const CopyFit& c);
std::string fit_name(const TransferFit& t);
// "ring (2, 3 ranks), rabenseifner (4 ranks)": the algorithms the fit's points ran (mpi_algorithm.hpp; "not
// known" where the file's MPI did not say), and on how many ranks.
std::string algorithms_measured(const TransferFit& f);
// "rabenseifner, rendezvous", "ring", "eager"; "not known" where neither is.
std::string regime_text(const std::string& algorithm, const std::string& protocol);
// "fit error 58.2% rms over 12 case(s), worst: a.h5 case 7 (measured 3.10x the fit), ..."
std::string fit_error_text(const FitError& e);

struct Model {
  std::string software_version;  // of the gpuscale that wrote the model file (set by the command)
  std::vector<ModelSource> sources;
  std::vector<ModelCase> cases;
  std::vector<GemmCurve> gemm;
  std::vector<CopyFit> copies;
  std::vector<TransferFit> transfers;
  std::vector<std::string> notes;  // what the fit left out, and why
  // Cases of the files whose numbers cannot be trusted (report/host_noise.hpp), "FILE cases 1-4 (why)": left out
  // of the fit, or fitted anyway where `noisy_fitted` (--include-noisy). The notes say so too; not in the model file.
  std::vector<std::string> noisy;
  bool noisy_fitted = false;
  int node_cores = 0;              // cores per node of the files' nodes (the least), for the CPU backend
  double sample_overhead_s = 0;    // host time around a sample's device time, median of the files' samples

  const GemmCurve* find_gemm(Backend backend, const std::string& dtype, const std::string& impl) const;
  const CopyFit* find_copy(Backend backend, const std::string& kind) const;
  const TransferFit* find_transfer(Backend backend, CommKind comm, const std::string& op) const;
};

// Ring steps of `op` over n ranks: allreduce 2(n-1); allgather, reduce_scatter,
// alltoall, broadcast, reduce n-1; point to point (sendrecv, pairs, p2p-*) 1.
double ring_steps(const std::string& op, int n);
// Steps between nodes (the same count over the group's nodes) and inside them (the rest).
double inter_steps(const std::string& op, int nodes);
// The row of the model's equation for one operation of `op_bytes`: steps and wire bytes per term, of the
// algorithm where it has a cost (mpi_algorithm.hpp), else of the ring, with nccl-tests' bus factor.
std::array<double, kTransferTerms> transfer_row(const std::string& op, int ranks, int nodes, double op_bytes,
                                                double bus_factor, const std::string& algorithm = "");

}  // namespace gpuscale
