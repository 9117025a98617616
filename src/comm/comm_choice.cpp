#include "comm/comm_choice.hpp"

#include "comm/mpi_data_comm.hpp"
#include "core/error.hpp"
#ifdef GPUSCALE_HAVE_NCCL
#include "comm/nccl_data_comm.hpp"
#endif

namespace gpuscale {

bool nccl_built() {
#ifdef GPUSCALE_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

DataCommFactory data_comm_factory(CommKind comm) {
#ifdef GPUSCALE_HAVE_NCCL
  if (comm == CommKind::nccl) return make_nccl_data_comm;
#endif
  if (comm != CommKind::mpi) {
    throw RuntimeError(std::string("comm \"") + comm_name(comm) + "\" is not built into this gpuscale");
  }
  return make_mpi_data_comm;
}

CommChoice choose_comm(const std::string& requested, Backend backend, bool nccl_built) {
  if (requested == "mpi") return {CommKind::mpi, "comm \"mpi\" requested"};
  if (requested == "nccl") {
    if (backend != Backend::cuda) {
      throw InputError(std::string("comm \"nccl\" needs the CUDA backend, and this run uses the ") +
                       backend_name(backend) + " backend (use comm \"mpi\" or \"auto\")");
    }
    if (!nccl_built) throw InputError("comm \"nccl\" cannot run: this gpuscale was built without NCCL");
    return {CommKind::nccl, "comm \"nccl\" requested"};
  }
  if (backend == Backend::cuda && nccl_built) return {CommKind::nccl, "comm auto: NCCL on the CUDA backend"};
  if (backend == Backend::cuda) {
    return {CommKind::mpi, "comm auto: this gpuscale was built without NCCL; MPI through host memory"};
  }
  return {CommKind::mpi, std::string("comm auto: MPI on the ") + backend_name(backend) + " backend"};
}

CommChoice comm_for_shared_devices(const CommChoice& chosen, const std::string& requested, const std::string& shared) {
  if (chosen.comm != CommKind::nccl || shared.empty()) return chosen;
  if (requested == "nccl") {
    throw InputError("comm \"nccl\" cannot run: " + shared + ", and NCCL refuses two ranks on one GPU; start one "
                     "rank per GPU, or use comm \"mpi\"");
  }
  return {CommKind::mpi, "comm auto: " + shared + ", which NCCL refuses; MPI through host memory instead"};
}

}  // namespace gpuscale
