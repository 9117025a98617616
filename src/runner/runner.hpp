// Runs one case on every rank: setup, warm-up, timed samples in the case's
// mode, verification, and the gather of every raw sample to rank 0.
//   serial:   ranks take turns (rank 0 runs all its samples while the others
//             wait without spinning, then rank 1, ...);
//   parallel: every sample starts from a barrier, all ranks at once.
#pragma once

#include <cstdint>
#include <string>

#include "comm/clock_sync.hpp"
#include "comm/mpi_communicator.hpp"
#include "core/plan.hpp"
#include "device/device.hpp"
#include "io/result_model.hpp"

namespace gpuscale {

class Runner {
 public:
  Runner(const MpiCommunicator& comm, Device& dev, const CommonClock& clock, std::string backend, std::uint64_t seed)
      : comm_(comm), dev_(dev), clock_(clock), backend_(std::move(backend)), seed_(seed) {}

  // Collective. The full record on rank 0; elsewhere only this rank's part.
  CaseRecord run(const Case& c);

 private:
  const MpiCommunicator& comm_;
  Device& dev_;
  const CommonClock& clock_;
  std::string backend_;
  std::uint64_t seed_;
};

}  // namespace gpuscale
