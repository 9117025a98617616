#include "comm/mpi_library.hpp"

#include <mpi.h>

#include <array>
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

int mpi_thread_level_to_request(const std::string& library_version) {
  std::smatch m;
  if (!std::regex_search(library_version, m, std::regex(R"(Open MPI v([0-9]+)\.([0-9]+)(?:\.([0-9]+))?)"))) {
    return MPI_THREAD_SERIALIZED;
  }
  const Version v{std::stoi(m[1].str()), std::stoi(m[2].str()), m[3].matched ? std::stoi(m[3].str()) : 0};
  const bool before_fix_4 = v < Version{4, 1, 7};
  const bool before_fix_5 = !(v < Version{5, 0, 0}) && v < Version{5, 0, 4};
  return before_fix_4 || before_fix_5 ? MPI_THREAD_MULTIPLE : MPI_THREAD_SERIALIZED;
}

std::string mpi_thread_level_name(int level) {
  if (level == MPI_THREAD_SINGLE) return "MPI_THREAD_SINGLE";
  if (level == MPI_THREAD_FUNNELED) return "MPI_THREAD_FUNNELED";
  if (level == MPI_THREAD_SERIALIZED) return "MPI_THREAD_SERIALIZED";
  if (level == MPI_THREAD_MULTIPLE) return "MPI_THREAD_MULTIPLE";
  return "thread level " + std::to_string(level);
}

}  // namespace gpuscale
