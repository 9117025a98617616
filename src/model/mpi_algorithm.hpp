// Which algorithm the job's MPI library runs for a collective, from the
// settings read from the library when the job ran (run_metadata.cpp:
// mpi_tuning_settings), and what that algorithm costs in steps and wire bytes
// (docs/model.md, "The algorithm MPI picks"). Pure functions, unit-tested.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpuscale {

// The settings of a run's MPI library that pick its collective algorithms: name, value as the library reports it.
using MpiSettings = std::vector<std::pair<std::string, std::string>>;

// The value of one setting, "" where absent.
std::string mpi_setting(const MpiSettings& settings, const std::string& name);

// The settings asked of the library (MPI_T control variables); a library without one leaves it out.
const std::vector<std::string>& mpi_tuning_names();

// What a library runs for `op` on `n` ranks at `op_bytes` (nccl-tests' size of one operation): "ring",
// "rabenseifner", "recursive_doubling", "bruck", "two_proc", "neighbor", "segmented_ring"; "" where it is not
// known: a library other than Open MPI 4.1, the tuned component not in charge, a rules file, an algorithm
// without a cost here, or an op that is not a collective.
std::string mpi_algorithm(const std::string& library, const MpiSettings& settings, const std::string& op, int n,
                          double op_bytes);

// The names mpi_algorithm gives other than "" (a model file's points hold one of them, or "").
const std::vector<std::string>& mpi_algorithm_names();

// How Open MPI's ob1 sends the largest message of one step of `algorithm` for `op` on n ranks across `nodes`
// nodes: "eager" at or below the TCP transport's eager limit (btl_tcp_eager_limit), "rendezvous" above it (a
// first fragment, then the rest once the receiver answers); "" where not known: another point-to-point layer
// (the settings' `pml`, as run_metadata records it, is not ob1), no such limit, a group on one node (shared
// memory has its own), or an algorithm without a cost here. sendrecv and pairs send the op's bytes at once.
std::string mpi_protocol(const MpiSettings& settings, const std::string& op, const std::string& algorithm, int n,
                         int nodes, double op_bytes);

// "Open MPI 4.1's tuned (fixed rules)", "Open MPI 4.1's tuned (coll_tuned_allreduce_algorithm=4)": who picked it.
std::string mpi_algorithm_source(const MpiSettings& settings, const std::string& op);

// Steps (latencies in turn) and wire bytes per op byte on the busiest rank's path of `algorithm` for `op` on n
// ranks (each step as long as its largest message: links carry both ways at once); none for "" or an algorithm
// without a cost here (the model then takes the ring of nccl-tests' bus factor, model.hpp).
struct Schedule {
  double steps = 0;
  double wire_per_byte = 0;
  double largest_message_per_byte = 0;  // the largest message one rank sends in one step, per op byte
};
std::optional<Schedule> algorithm_schedule(const std::string& op, const std::string& algorithm, int n);

}  // namespace gpuscale
