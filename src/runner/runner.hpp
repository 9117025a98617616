// Runs one case on every rank: setup, warm-up, timed samples in the case's
// mode, verification, and the gather of every raw sample to rank 0.
//   serial:   turns run one after another (a device-local workload: each
//             rank alone, rank 0 first; a transfer: each group of its scope,
//             or each pair for `pairs`), while the other ranks wait without
//             spinning;
//   parallel: every sample starts from a barrier, all ranks at once.
// A case this job's shape cannot run (see Workload::skip_reason) is skipped
// by every rank and recorded with the reason.
#pragma once

#include <cstdint>
#include <string>

#include "comm/clock_sync.hpp"
#include "comm/groups.hpp"
#include "comm/mpi_communicator.hpp"
#include "core/plan.hpp"
#include "device/device.hpp"
#include "io/result_model.hpp"
#include "runner/case_timeout.hpp"
#include "runner/watchdog.hpp"
#include "telemetry/telemetry.hpp"
#include "workloads/workload.hpp"

namespace gpuscale {

// Seconds of warm-up before a case's timed samples when the case sets no
// `warmup_s`: 0.5 on the CUDA backend (clocks leave idle, first kernels load), 0 on the CPU.
double default_warmup_s(Backend backend);

class Runner {
 public:
  // `groups` may be null when no case transfers data.
  Runner(const MpiCommunicator& comm, Device& dev, Groups* groups, const CommonClock& clock, Backend backend,
         std::uint64_t seed)
      : comm_(comm), dev_(dev), groups_(groups), clock_(clock), backend_(backend), seed_(seed) {}

  // Reads this rank's GPU every `interval_s` from the start of each case's
  // warm-up to its last timed sample (null: no telemetry on this rank).
  void set_telemetry(TelemetrySource* source, double interval_s) {
    telemetry_ = source;
    telemetry_interval_s_ = interval_s;
  }

  // Arms `watchdog` for every case it runs, by `timeout` (null: no watchdog);
  // the plan has `cases` cases (for its messages: "case 3 of 8 (label)").
  void set_watchdog(Watchdog* watchdog, CaseTimeout timeout, std::size_t cases) {
    watchdog_ = watchdog;
    timeout_ = timeout;
    cases_ = cases;
  }

  // Collective. The full record on rank 0; elsewhere only this rank's part. Memory that cannot be had is an
  // OutOfMemory naming the case.
  CaseRecord run(const Case& c);

 private:
  const MpiCommunicator& comm_;
  Device& dev_;
  Groups* groups_;
  const CommonClock& clock_;
  Backend backend_;
  std::uint64_t seed_;
  CaseRecord run_case(const Case& c);
  CaseContext context(const Case& c, PhaseLog& phases) const;
  CaseRecord start_record(const Case& c, const CaseContext& ctx, double warmup_s) const;
  void finish_record(const Workload& w, const CaseContext& ctx, const Verification& v, CaseRecord& rec,
                     std::vector<CaseTable> tables) const;

  TelemetrySource* telemetry_ = nullptr;
  double telemetry_interval_s_ = 0.0;
  Watchdog* watchdog_ = nullptr;
  CaseTimeout timeout_;
  std::size_t cases_ = 0;
};

// Readings every 50 ms: a few per second-long case, without disturbing it.
constexpr double kTelemetryIntervalS = 0.05;

}  // namespace gpuscale
