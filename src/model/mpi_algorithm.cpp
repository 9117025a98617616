#include "model/mpi_algorithm.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <regex>
#include <sstream>

namespace gpuscale {

namespace {

// Open MPI 4.1's coll components that take collectives from tuned where their priority is above tuned's.
const char* const kRivals[] = {"han", "adapt", "hcoll", "ucc"};

long setting_int(const MpiSettings& s, const std::string& name, long otherwise) {
  const std::string v = mpi_setting(s, name);
  if (v.empty()) return otherwise;
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  return end && *end == '\0' ? x : otherwise;
}

bool open_mpi_41(const std::string& library) {
  return std::regex_search(library, std::regex("^Open MPI v4\\.1\\.[0-9]"));
}

// Whether the `coll` selection (e.g. "^tuned", "basic,self") leaves tuned out.
bool tuned_deselected(const std::string& coll) {
  if (coll.empty()) return false;
  const bool negated = coll[0] == '^';
  std::istringstream names(negated ? coll.substr(1) : coll);
  bool listed = false;
  for (std::string name; std::getline(names, name, ',');) listed = listed || name == "tuned";
  return negated ? listed : !listed;
}

bool tuned_in_charge(const MpiSettings& s) {
  const long tuned = setting_int(s, "coll_tuned_priority", -1);
  if (tuned < 0 || tuned_deselected(mpi_setting(s, "coll"))) return false;
  for (const char* r : kRivals) {
    const std::string c = std::string("coll_") + r;
    if (setting_int(s, c + "_priority", -1) > tuned && setting_int(s, c + "_enable", 1) != 0) return false;
  }
  return true;
}

bool power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

int floor_pow2(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

// The most blocks a rank sends in one step of Bruck's allgather: min(2^k, n - 2^k) at step k.
double bruck_largest(int n) {
  int most = 0;
  for (int d = 1; d < n; d *= 2) most = std::max(most, std::min(d, n - d));
  return most;
}

// ompi_coll_tuned_allreduce_intra_dec_fixed (Open MPI 4.1, commutative ops), for the communicators up to 31.
int allreduce_fixed(int n, double bytes) {
  if (n < 4) {
    if (bytes < 8) return 4;
    if (bytes < 4096) return 3;
    if (bytes < 8192) return 4;
    if (bytes < 16384) return 3;
    if (bytes < 65536) return 4;
    return bytes < 262144 ? 5 : 6;
  }
  if (n < 8) return bytes < 16 ? 4 : bytes < 8192 ? 3 : 6;
  if (n < 16) return bytes < 8192 ? 3 : 6;
  if (n < 32) return bytes < 64 ? 5 : bytes < 4096 ? 3 : 6;
  return 0;  // larger communicators: not transcribed
}

// ompi_coll_tuned_allgather_intra_dec_fixed (Open MPI 4.1) on the bytes each rank sends, up to 63 ranks.
int allgather_fixed(int n, double block) {
  if (n == 2) return 6;
  if (n < 32) return 3;
  if (n < 64) return block < 1024 ? 3 : block < 65536 ? 5 : 4;
  return 0;
}

// The algorithm numbers of coll_tuned_<op>_algorithm, and the fallbacks of coll/base for the shapes they
// cannot take (recursive doubling allgather on a non-power of two runs Bruck, neighbor exchange on odd ranks a
// ring, the two-process ones on more than two ranks the fixed rules).
std::string allreduce_name(int alg) {
  switch (alg) {
    case 3: return "recursive_doubling";
    case 4: return "ring";
    case 5: return "segmented_ring";
    case 6: return "rabenseifner";
    default: return "";  // basic linear, nonoverlapping: no cost here
  }
}

std::string allgather_name(int alg, int n) {
  switch (alg) {
    case 2: return "bruck";
    case 3: return power_of_two(n) ? "recursive_doubling" : "bruck";
    case 4: return "ring";
    case 5: return n % 2 == 0 ? "neighbor" : "ring";
    case 6: return n == 2 ? "two_proc" : "";
    default: return "";
  }
}

long forced_algorithm(const MpiSettings& s, const std::string& op) {
  if (setting_int(s, "coll_tuned_use_dynamic_rules", 0) == 0) return 0;
  return setting_int(s, "coll_tuned_" + op + "_algorithm", 0);
}

}  // namespace

std::string mpi_setting(const MpiSettings& settings, const std::string& name) {
  const auto it =
      std::find_if(settings.begin(), settings.end(), [&](const auto& kv) { return kv.first == name; });
  return it == settings.end() ? "" : it->second;
}

const std::vector<std::string>& mpi_tuning_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v{"coll", "coll_tuned_priority", "coll_tuned_use_dynamic_rules",
                               "coll_tuned_dynamic_rules_filename", "coll_tuned_allreduce_algorithm",
                               "coll_tuned_allgather_algorithm", "btl_tcp_eager_limit", "btl_tcp_flags"};
    for (const char* r : kRivals) {
      v.push_back(std::string("coll_") + r + "_priority");
      v.push_back(std::string("coll_") + r + "_enable");
    }
    return v;
  }();
  return names;
}

const std::vector<std::string>& mpi_algorithm_names() {
  static const std::vector<std::string> names{"ring",  "segmented_ring", "recursive_doubling", "rabenseifner",
                                              "bruck", "two_proc",       "neighbor"};
  return names;
}

std::string mpi_algorithm(const std::string& library, const MpiSettings& settings, const std::string& op, int n,
                          double op_bytes) {
  if (n < 2 || (op != "allreduce" && op != "allgather")) return "";
  if (!open_mpi_41(library) || !tuned_in_charge(settings)) return "";
  const long forced = forced_algorithm(settings, op);
  if (forced == 0 && setting_int(settings, "coll_tuned_use_dynamic_rules", 0) != 0 &&
      !mpi_setting(settings, "coll_tuned_dynamic_rules_filename").empty()) {
    return "";  // a rules file: not read here
  }
  if (op == "allreduce") return allreduce_name(forced > 0 ? static_cast<int>(forced) : allreduce_fixed(n, op_bytes));
  const int fixed = allgather_fixed(n, op_bytes / n);
  const std::string name = allgather_name(forced > 0 ? static_cast<int>(forced) : fixed, n);
  return name.empty() && forced == 6 ? allgather_name(fixed, n) : name;
}

std::string mpi_algorithm_source(const MpiSettings& settings, const std::string& op) {
  const long forced = forced_algorithm(settings, op);
  if (forced > 0) return "Open MPI 4.1's tuned (coll_tuned_" + op + "_algorithm=" + std::to_string(forced) + ")";
  return "Open MPI 4.1's tuned (fixed rules)";
}

std::optional<Schedule> algorithm_schedule(const std::string& op, const std::string& algorithm, int n) {
  const double k = std::max(0, n - 1);
  const int p = floor_pow2(std::max(1, n));
  const double lg = std::log2(static_cast<double>(p));
  const bool folded = p != n;  // ranks beyond the power of two fold into their neighbours first, and wait at the end
  if (op == "allreduce") {
    if (algorithm == "ring" || algorithm == "segmented_ring") return Schedule{2 * k, 2 * k / n, 1.0 / n};
    // The whole buffer each step; a fold sends it to the even neighbour first and gets the result back last.
    if (algorithm == "recursive_doubling") return Schedule{lg + (folded ? 2 : 0), lg + (folded ? 2 : 0), 1};
    // Halves exchanged, the result's half sent back, the whole result to the folded rank last: 2 buffers more.
    if (algorithm == "rabenseifner") {
      return Schedule{2 * lg + (folded ? 3 : 0), 2 * (p - 1.0) / p + (folded ? 2 : 0), folded ? 1.0 : 0.5};
    }
  }
  if (op == "allgather") {
    if (algorithm == "ring") return Schedule{k, k / n, 1.0 / n};
    if (algorithm == "bruck") return Schedule{std::ceil(std::log2(std::max(1, n))), k / n, bruck_largest(n) / n};
    if (algorithm == "recursive_doubling") return Schedule{lg, k / n, 0.5};
    if (algorithm == "two_proc") return Schedule{1, 0.5, 0.5};
    if (algorithm == "neighbor") return Schedule{n / 2.0, k / n, 2.0 / n};
  }
  return std::nullopt;
}

std::string mpi_protocol(const MpiSettings& settings, const std::string& op, const std::string& algorithm, int n,
                         int nodes, double op_bytes) {
  const long eager = setting_int(settings, "btl_tcp_eager_limit", -1);
  if (nodes < 2 || eager < 0 || mpi_setting(settings, "pml") != "ob1") return "";
  double largest = 0;
  if (op == "sendrecv" || op == "pairs") {
    largest = op_bytes;
  } else if (const auto s = algorithm_schedule(op, algorithm, n)) {
    largest = s->largest_message_per_byte * op_bytes;
  } else {
    return "";
  }
  return largest > static_cast<double>(eager) ? "rendezvous" : "eager";
}

}  // namespace gpuscale
