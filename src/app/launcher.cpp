#include "app/launcher.hpp"

#include <cstdlib>

namespace gpuscale {

bool started_by_launcher(const EnvLookup& env) {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK", "SLURM_STEP_ID"}) {
    if (const char* v = env(var); v && *v) return true;
  }
  return false;
}

bool started_by_launcher() {
  return started_by_launcher([](const char* name) { return std::getenv(name); });
}

int rank_from_launcher() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* v = std::getenv(var); v && *v) return std::atoi(v);
  }
  return -1;
}

std::string singleton_note(const std::string& command_line) {
  return "note: 1 rank (no mpirun or srun): serial and parallel are the same; for speedups run mpirun -np N " +
         command_line;
}

}  // namespace gpuscale
