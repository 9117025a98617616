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

namespace gpuscale {

// Where a model's rates came from: one result file.
struct ModelSource {
  std::string path, date;
  Backend backend = Backend::cpu;
  std::optional<CommKind> comm;  // none: a file of schema 1.0 (no transfers)
  std::string device;
  int ranks = 1, nodes = 1, node_cores = 0;
};

// A case of the files, for `predict MODEL.json` without a config.
struct ModelCase {
  std::string experiment, workload;
  Mode mode = Mode::parallel;
  Params params;
};

// GEMM of one kind: seconds per call at measured sizes (flops per call), per core used.
struct GemmPoint {
  double flops = 0;          // per call
  double core_flops_s = 0;   // flops per second per core used (1 on a GPU)
  double rel_ci = 0;         // half the width of the median's 95% interval, relative to the median
};
struct GemmCurve {
  Backend backend = Backend::cpu;
  std::string device, dtype, impl;
  std::vector<GemmPoint> points;  // by flops, one per size (the median of its cases)
};

// Copies of one kind ("host-pinned", "host-pageable", "device", "pass"): seconds = calls x latency + bytes / rate.
struct CopyFit {
  Backend backend = Backend::cpu;
  std::string kind;
  double latency_s = 0, bytes_s = 0;
  double min_bytes = 0, max_bytes = 0;  // per call, the sizes fitted
  double rel_rms = 0;                   // of the fit's relative residuals
  int points = 0;
};

// One measured transfer case: its shape and its time per operation.
struct TransferPoint {
  int ranks = 1, nodes = 1;  // of the group
  double bytes = 0;          // op bytes
  double op_s = 0;           // median over samples of the mean over ranks of busy time / operations
  std::string from;          // "FILE case N"
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
  double rel_rms = 0;  // of the relative residuals
  std::vector<TransferPoint> points;
};

struct Model {
  std::string software_version;  // of the gpuscale that wrote the model file (set by the command)
  std::vector<ModelSource> sources;
  std::vector<ModelCase> cases;
  std::vector<GemmCurve> gemm;
  std::vector<CopyFit> copies;
  std::vector<TransferFit> transfers;
  std::vector<std::string> notes;  // what the fit left out, and why
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
// The row of the model's equation for one operation: steps and wire bytes per term.
std::array<double, kTransferTerms> transfer_row(const std::string& op, int ranks, int nodes, double wire_bytes);

}  // namespace gpuscale
