// Whether a launcher (mpirun, mpiexec, srun) started this process, from the variables it sets in every process it
// starts: a singleton (gpuscale run typed alone) has one rank, and `run` says what that leaves out.
#pragma once

#include <functional>
#include <string>

namespace gpuscale {

using EnvLookup = std::function<const char*(const char*)>;

// True when a launcher's variables are set: Open MPI's mpirun (OMPI_COMM_WORLD_SIZE), PMIx (PMIX_RANK: srun
// --mpi=pmix, Open MPI 5), PMI (PMI_SIZE: MPICH's and Intel MPI's mpiexec, srun --mpi=pmi2) or srun itself
// (SLURM_STEP_ID). Asked before MPI starts, whose singleton start may set some of them.
bool started_by_launcher(const EnvLookup& env);
bool started_by_launcher();

// The rank a launcher gave this process (its variables), -1 when none did: who this is before MPI starts.
int rank_from_launcher();

// The note `run` prints on one rank started without a launcher; `command_line` is the run's own, to copy.
std::string singleton_note(const std::string& command_line);

}  // namespace gpuscale
