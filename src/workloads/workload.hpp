// A workload: what one timed sample does on a device, how much work that is,
// and how its result is checked. Created per case by the registry.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/param_spec.hpp"
#include "core/value.hpp"
#include "device/device.hpp"

namespace gpuscale {

struct Verification {
  bool ok = false;
  double max_error = 0.0;  // the workload's error measure (see its header)
  double tolerance = 0.0;
};

class Workload {
 public:
  virtual ~Workload() = default;
  // Allocates and fills inputs; `seed` differs per rank.
  virtual void setup(Device& dev, std::uint64_t seed) = 0;
  // Enqueues one sample's work; the runner synchronizes and times it.
  virtual void run_sample(Device& dev) = 0;
  virtual double flops_per_sample() const = 0;  // 0 for a bandwidth workload
  virtual double bytes_per_sample() const = 0;
  // Checks the last sample's result.
  virtual Verification verify(Device& dev) = 0;
  // What a reader of the results must know about how this ran here ("" if nothing).
  virtual std::string note(const Device&) const { return ""; }
};

struct WorkloadEntry {
  WorkloadSchema schema;
  std::function<std::unique_ptr<Workload>(const Params&)> make;
  // "" when the backend ("cpu" | "cuda") can run a case with these parameters, else why not.
  std::function<std::string(const Params&, const std::string& backend)> unsupported;
};

// The explicit list of workloads, in the order `--help` shows them.
const std::vector<WorkloadEntry>& workload_registry();
std::vector<WorkloadSchema> workload_schemas();
// Throws std::out_of_range for an unknown name (the config loader rejects those first).
const WorkloadEntry& find_workload(const std::string& name);

struct Case;
// InputError naming the first case that `backend` cannot run, and why.
void check_plan_runs_on(const std::vector<Case>& plan, const std::string& backend_name);

}  // namespace gpuscale
