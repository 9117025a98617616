#include "app/run_metadata.hpp"

#include <hdf5.h>
#include <mpi.h>

#include <algorithm>
#include <ctime>
#include <regex>
#include <vector>

#include "comm/mpi_library.hpp"
#include "device/cpu_device.hpp"
#include "model/mpi_algorithm.hpp"
#ifdef GPUSCALE_HAVE_NCCL
#include "comm/nccl_data_comm.hpp"
#endif
#include "gpuscale_version.hpp"

extern char** environ;

namespace gpuscale {

std::string software_version() { return GPUSCALE_VERSION; }

std::string mpi_built_with() {
#if defined(OMPI_MAJOR_VERSION)
  return "Open MPI " + std::to_string(OMPI_MAJOR_VERSION) + "." + std::to_string(OMPI_MINOR_VERSION) + "." +
         std::to_string(OMPI_RELEASE_VERSION);
#elif defined(MPICH_VERSION)
  return std::string("MPICH ") + MPICH_VERSION;
#else
  return "MPI " + std::to_string(MPI_VERSION) + "." + std::to_string(MPI_SUBVERSION) + " (library not named by mpi.h)";
#endif
}

std::string mpi_library_version() {
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(lib, &len);
  std::string s(lib, static_cast<std::size_t>(std::max(0, len)));
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\0')) s.pop_back();
  return std::regex_replace(s, std::regex("\\s*\n\\s*"), "; ");
}

namespace {

// The value of control variable `index` as text: a number, a string; "" where it is bound to an object or of
// another type.
std::string cvar_text(int index) {
  char name[256];
  int name_len = sizeof name, verbosity = 0, desc_len = 0, bind = 0, scope = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_T_enum enumtype = MPI_T_ENUM_NULL;
  if (MPI_T_cvar_get_info(index, name, &name_len, &verbosity, &type, &enumtype, nullptr, &desc_len, &bind,
                          &scope) != MPI_SUCCESS ||
      bind != MPI_T_BIND_NO_OBJECT) {
    return "";
  }
  MPI_T_cvar_handle h = MPI_T_CVAR_HANDLE_NULL;
  int count = 0;
  if (MPI_T_cvar_handle_alloc(index, nullptr, &h, &count) != MPI_SUCCESS) return "";
  std::string out;
  if (type == MPI_CHAR && count >= 0) {
    std::vector<char> buf(static_cast<std::size_t>(count) + 1, '\0');
    if (MPI_T_cvar_read(h, buf.data()) == MPI_SUCCESS) out = buf.data();
  } else if (count == 1) {
    alignas(16) unsigned char buf[16] = {};
    if (MPI_T_cvar_read(h, buf) == MPI_SUCCESS) {
      if (type == MPI_INT) out = std::to_string(*reinterpret_cast<int*>(buf));
      if (type == MPI_UNSIGNED) out = std::to_string(*reinterpret_cast<unsigned*>(buf));
      if (type == MPI_UNSIGNED_LONG) out = std::to_string(*reinterpret_cast<unsigned long*>(buf));
      if (type == MPI_UNSIGNED_LONG_LONG) out = std::to_string(*reinterpret_cast<unsigned long long*>(buf));
      if (type == MPI_LONG) out = std::to_string(*reinterpret_cast<long*>(buf));
      if (type == MPI_LONG_LONG) out = std::to_string(*reinterpret_cast<long long*>(buf));
      if (type == MPI_C_BOOL) out = *reinterpret_cast<bool*>(buf) ? "1" : "0";
    }
  }
  MPI_T_cvar_handle_free(&h);
  return out;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> mpi_tuning_settings() {
  std::vector<std::pair<std::string, std::string>> out;
  int provided = 0;
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return out;
  for (const std::string& name : mpi_tuning_names()) {
    int index = -1;
    if (MPI_T_cvar_get_index(name.c_str(), &index) != MPI_SUCCESS) continue;
    out.emplace_back(name, cvar_text(index));
  }
  MPI_T_finalize();
  if (const std::string pml = open_mpi_selected_pml(); !pml.empty()) out.emplace_back("pml", pml);
  return out;
}

std::string mpi_runs_with() {
  const std::string s = mpi_library_version();
  return s.substr(0, s.find_first_of(";,"));
}

std::string version_text() {
  const std::string mpiexec = GPUSCALE_MPIEXEC;
  return "gpuscale " + software_version() + "\nMPI: built with " + mpi_built_with() + ", runs with " +
         mpi_runs_with() + "\nmpiexec: " + (mpiexec.empty() ? "none found at build time" : mpiexec);
}

namespace {
std::string now_formatted(const char* f) {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, f, &tm);
  return buf;
}
}  // namespace

std::string iso8601_now() { return now_formatted("%Y-%m-%dT%H:%M:%S%z"); }

std::string compact_timestamp_now() { return now_formatted("%Y%m%d-%H%M%S"); }

std::string software_dependencies(const CudaStatus& cuda) {
  std::string deps = mpi_dependency(mpi_library_version());
  std::smatch m;
  unsigned maj = 0, min = 0, rel = 0;
  H5get_libversion(&maj, &min, &rel);
  deps += ";hdf5@" + std::to_string(maj) + "." + std::to_string(min) + "." + std::to_string(rel);
  const std::string blas = blas_version();
  if (std::regex_search(blas, m, std::regex("OpenBLAS ([0-9][0-9.]*)"))) deps += ";openblas@" + m[1].str();
  if (cuda.built && !cuda.runtime_version.empty()) deps += ";cuda@" + cuda.runtime_version;
#ifdef GPUSCALE_HAVE_NCCL
  deps += ";nccl@" + nccl_version();
#endif
  return deps;
}

std::vector<std::pair<std::string, std::string>> relevant_environment() {
  static const char* prefixes[] = {"SLURM_", "OMPI_", "MPIR_CVAR_", "MPICH_", "HYDRA_", "I_MPI_", "UCX_",
                                   "CUDA_", "NCCL_", "OPENBLAS_", "OMP_"};
  static const char* names[] = {"PMI_SIZE", "MPI_LOCALNRANKS"};  // MPICH's Hydra: the job's and node's ranks
  std::vector<std::pair<std::string, std::string>> out;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv(*e);
    const auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    const std::string k = kv.substr(0, eq);
    const bool named = std::any_of(std::begin(names), std::end(names), [&](const char* n) { return k == n; });
    const bool prefixed =
        std::any_of(std::begin(prefixes), std::end(prefixes), [&](const char* p) { return k.rfind(p, 0) == 0; });
    if (named || prefixed) out.emplace_back(k, kv.substr(eq + 1));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace gpuscale
