// Fits a model (model.hpp) to measured result files: `gpuscale model`.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "io/result_model.hpp"
#include "model/model.hpp"
#include "workloads/work.hpp"

namespace gpuscale {

struct FitOptions {
  bool include_noisy = false;  // fit the cases whose numbers the host makes doubtful too (report/host_noise.hpp)
};

// The model of the cases that ran in `runs` (path, run). Cases that mix
// kinds of work (dp_step, pipeline, ...) are predicted, not fitted; cases
// whose numbers the host makes doubtful are left out (unless
// opt.include_noisy) and named; what is left out, and why, goes to
// Model::notes. InputError when nothing in the files can be fitted;
// RuntimeError (nothing_left_text) when only the noisy cases could be.
Model fit_model(const std::vector<std::pair<std::string, RunRecord>>& runs, const FitOptions& opt = {});

// "nothing left to fit: ..." naming the cases left out as noisy ("FILE case N (why)"), and what to do.
std::string nothing_left_text(const std::vector<std::string>& noisy);

// Per timed sample of a case, the mean over the ranks that took part of their device (busy) time.
std::vector<double> busy_per_sample(const CaseRecord& c);

// The job a file's cases ran on, as the estimate sees it.
JobShape job_of(const RunRecord& run);

// The cores one rank's work had on that job (CPU backend: its threads, fewer where its node's busy ranks
// share fewer cores; 1 on a GPU).
double cores_used(Backend backend, const Params& params, const CaseWork& w, const JobShape& job);

}  // namespace gpuscale
