// The experiment file (TOML): defaults plus a list of experiments whose
// list-valued keys expand into cases. Loading validates every key and value
// against the workload schemas and reports the file, line and key of a mistake.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/param_spec.hpp"
#include "core/value.hpp"

namespace gpuscale {

// Threads a rank may ask for: each is an OS thread, and no node has more cores.
constexpr std::int64_t kMaxThreads = 4096;

struct Defaults {
  std::string backend = "auto";  // auto | cpu | cuda
  std::string comm = "auto";     // auto | mpi | nccl: what moves data between ranks
  std::int64_t warmup = 2;
  std::optional<double> warmup_s;  // unset: the backend's (runner/warmup.hpp)
  std::int64_t reps = 10;
  std::int64_t threads = 1;      // BLAS threads per rank
  double timeout_s = 0.0;        // per case, per rank; 0: derived from the case (runner/case_timeout.hpp)
  std::int64_t seed = 42;
  bool share_devices = false;    // ranks of one node may use the same GPU
  double budget_s = 0.0;         // refuse a plan estimated over this (0: no budget)
};

// How a case's ranks take their turns: one after another (serial) or all at once (parallel). An enum in
// memory, its name (mode_name) in configs, files and print.
enum class Mode { serial, parallel };
const char* mode_name(Mode m);
// The mode of a name as mode_name writes it; none for another text.
std::optional<Mode> parse_mode(const std::string& s);

struct Experiment {
  std::string name;
  std::string workload;
  std::vector<Mode> modes;
  // Every parameter (common ones first, then the workload's) with its values;
  // one value unless the config gave a list. Optional parameters not given are absent.
  std::vector<std::pair<std::string, std::vector<Value>>> params;
  // [experiment.expect]: limits every case of the experiment must meet (name, value), for report --check.
  std::vector<std::pair<std::string, double>> expect;
};

// The limits [experiment.expect] accepts, and what each bounds.
struct ExpectLimit {
  std::string key, meaning;
};
const std::vector<ExpectLimit>& expect_limits();

struct Config {
  std::string source;  // file path, for messages and the result file
  std::string text;    // the file as read
  std::vector<std::string> overrides;  // --set KEY=VALUE, as given
  Defaults defaults;
  std::vector<Experiment> experiments;
};

const std::vector<std::string>& backend_choices();
const std::vector<std::string>& comm_choices();
const std::vector<std::string>& mode_choices();

// Parses and validates. Throws InputError with "SOURCE:LINE:COL: message".
// `overrides` are "KEY=VALUE" strings: KEY is defaults.K, EXPERIMENT.K, or K
// (a default when K is one, else every experiment whose workload has K).
// `base` holds the defaults of keys the file leaves out of [defaults].
Config parse_config(const std::string& text, const std::string& source,
                    const std::vector<std::string>& overrides,
                    const std::vector<WorkloadSchema>& workloads, const Defaults& base = {});

// Reads the file (InputError if it cannot, or if it is not a regular file of
// at most 1 MiB: core/config_shape.hpp) and parses it.
Config load_config(const std::string& path, const std::vector<std::string>& overrides,
                   const std::vector<WorkloadSchema>& workloads, const Defaults& base = {});

// The parameters every case has besides its workload's (warmup, warmup_s, reps, threads), with their ranges and,
// as defaults, those of `d`: what a config's [defaults] gives them, and what a model file's cases are read with.
std::vector<ParamSpec> case_common_specs(const Defaults& d);

// The defaults where the job's environment says more than the built-in ones:
// under Slurm, `threads` is the task's CPUs (SLURM_CPUS_PER_TASK) when set.
// `cpus_per_task` is that variable's value (null: unset).
Defaults environment_defaults(const char* cpus_per_task);

}  // namespace gpuscale
