// The plan: every experiment expanded into cases, one per combination of its
// list-valued parameters (cartesian product), modes innermost so each
// serial case is followed by its parallel twin.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/value.hpp"

namespace gpuscale {

struct Case {
  std::size_t index = 0;  // position in the plan, from 0
  std::string experiment;
  std::string workload;
  Mode mode = Mode::parallel;
  Params params;  // warmup, reps, threads, then the workload's own
  std::vector<std::pair<std::string, double>> expect;  // its experiment's [experiment.expect]

  // Workload parameters only (not warmup/reps/threads): "size=512 dtype=fp64 ops=4".
  std::string param_label() const;
  // "gemm-512 size=512 dtype=fp64 ops=4 [serial]"
  std::string label() const;
  // How every view numbers it, as the progress line does: from 1 (index 2 is case 3).
  std::size_t number() const { return index + 1; }
  // "case 3 of 8 (gemm-512 size=512 dtype=fp64 ops=4 [serial])", for a plan of `cases`.
  std::string numbered(std::size_t cases) const;
};

// Names of the parameters every case has besides its workload's.
const std::vector<std::string>& runner_param_keys();
// Those that say how many samples a case took, not what it is (warmup, warmup_s, reps): a case's identity
// in the report, and for matching a prediction with a measured case, is its parameters without them.
const std::vector<std::string>& sample_count_keys();

// The most cases a plan may have unless the user raises it (--max-cases):
// more is most likely a list typo multiplying cases.
constexpr std::size_t kDefaultMaxCases = 10000;

// The number of cases `expand` would make, from the lists' lengths alone
// (saturating at SIZE_MAX), before the serials that equal their parallel
// twin are dropped.
std::size_t plan_size(const Config& cfg);

// InputError when plan_size(cfg) > max_cases, naming the experiments and the
// keys whose lists multiply, with their lengths.
void check_plan_size(const Config& cfg, std::size_t max_cases);

std::vector<Case> expand(const Config& cfg);

}  // namespace gpuscale
