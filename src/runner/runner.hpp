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

namespace gpuscale {

class Runner {
 public:
  // `groups` may be null when no case transfers data.
  Runner(const MpiCommunicator& comm, Device& dev, Groups* groups, const CommonClock& clock, std::string backend,
         std::uint64_t seed)
      : comm_(comm), dev_(dev), groups_(groups), clock_(clock), backend_(std::move(backend)), seed_(seed) {}

  // Collective. The full record on rank 0; elsewhere only this rank's part.
  CaseRecord run(const Case& c);

 private:
  const MpiCommunicator& comm_;
  Device& dev_;
  Groups* groups_;
  const CommonClock& clock_;
  std::string backend_;
  std::uint64_t seed_;
};

}  // namespace gpuscale
