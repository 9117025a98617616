#include "comm/mpi_library.hpp"

#include <dlfcn.h>
#include <mpi.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <regex>

namespace gpuscale {

namespace {

struct Library {
  const char* pattern;  // its version is the first group
  const char* name;
};

// Derivatives before MPICH itself: Cray's and MVAPICH's texts also say "MPICH".
constexpr std::array<Library, 6> kLibraries{{
    {R"(Open MPI v([0-9][0-9.]*))", "openmpi"},
    {R"(CRAY MPICH version ([0-9][0-9.]*))", "cray-mpich"},
    {R"(MVAPICH2\s+Version\s*:\s*([0-9][0-9.a-z]*))", "mvapich2"},
    {R"(MVAPICH\s+Version\s*:\s*([0-9][0-9.a-z]*))", "mvapich"},
    {R"(Intel\(R\) MPI Library ([0-9][0-9.]*))", "intel-oneapi-mpi"},
    {R"(MPICH Version\s*:\s*([0-9][0-9.a-z]*))", "mpich"},
}};

struct Version {
  int major = 0, minor = 0, release = 0;
};

bool operator<(const Version& a, const Version& b) {
  if (a.major != b.major) return a.major < b.major;
  if (a.minor != b.minor) return a.minor < b.minor;
  return a.release < b.release;
}

}  // namespace

std::string mpi_dependency(const std::string& library_version) {
  std::smatch m;
  for (const auto& lib : kLibraries) {
    if (std::regex_search(library_version, m, std::regex(lib.pattern, std::regex::icase))) {
      return std::string(lib.name) + "@" + m[1].str();
    }
  }
  std::string first = library_version.substr(0, library_version.find_first_of(",;\n"));
  first = std::regex_replace(first, std::regex("\\s+"), " ");
  return "mpi@" + std::regex_replace(first, std::regex("^ | $"), "");
}

bool ucx_needs_thread_multiple(const std::string& library_version) {
  std::smatch m;
  if (!std::regex_search(library_version, m, std::regex(R"(Open MPI v([0-9]+)\.([0-9]+)(?:\.([0-9]+))?)"))) {
    return false;
  }
  const Version v{std::stoi(m[1].str()), std::stoi(m[2].str()), m[3].matched ? std::stoi(m[3].str()) : 0};
  const bool before_fix_4 = v < Version{4, 1, 7};
  const bool before_fix_5 = !(v < Version{5, 0, 0}) && v < Version{5, 0, 4};
  return before_fix_4 || before_fix_5;
}

bool ucx_pml_possible(const char* ompi_mca_pml, bool rdma_devices) {
  if (!ompi_mca_pml) return rdma_devices;
  // "ucx", "ob1,ucx": named; "^ucx", "^cm,ucx": all but those; "ob1": not it.
  const bool negated = ompi_mca_pml[0] == '^';
  const std::string list = ompi_mca_pml + (negated ? 1 : 0);
  const bool named = std::regex_search(list, std::regex(R"((^|,)\s*ucx\s*(,|$))"));
  return negated ? !named && rdma_devices : named;
}

int mpi_thread_level_to_request(const std::string& library_version, bool ucx_possible) {
  return ucx_possible && ucx_needs_thread_multiple(library_version) ? MPI_THREAD_MULTIPLE : MPI_THREAD_SERIALIZED;
}

int mpi_thread_level_to_request(const std::string& library_version) {
  std::error_code ec;
  const bool rdma = std::filesystem::is_directory("/sys/class/infiniband", ec) &&
                    !std::filesystem::is_empty("/sys/class/infiniband", ec);
  return mpi_thread_level_to_request(library_version, ucx_pml_possible(std::getenv("OMPI_MCA_pml"), rdma));
}

std::string open_mpi_selected_pml() {
  const auto* p = static_cast<const char*>(dlsym(RTLD_DEFAULT, "mca_pml_base_selected_component"));
  if (!p) return "";
  // Three ints of version, the project's name (char[16]), three ints, the type's name (char[32]), three ints,
  // the component's name (char[64]).
  const char* project = p + 3 * sizeof(int);
  const char* type = project + 16 + 3 * sizeof(int);
  const char* name = type + 32 + 3 * sizeof(int);
  if (std::strncmp(project, "ompi", 16) != 0 || std::strncmp(type, "pml", 32) != 0) return "";
  return std::string(name, strnlen(name, 64));
}

std::string mpi_thread_level_name(int level) {
  if (level == MPI_THREAD_SINGLE) return "MPI_THREAD_SINGLE";
  if (level == MPI_THREAD_FUNNELED) return "MPI_THREAD_FUNNELED";
  if (level == MPI_THREAD_SERIALIZED) return "MPI_THREAD_SERIALIZED";
  if (level == MPI_THREAD_MULTIPLE) return "MPI_THREAD_MULTIPLE";
  return "thread level " + std::to_string(level);
}

}  // namespace gpuscale
