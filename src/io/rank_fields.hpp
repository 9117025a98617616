// The per-rank record's columns: /ranks of the result file, one line each. The gather to rank 0
// (app/rank_table), the writer, the reader and the docs test all go through kRankFields, so a rank
// field is added there alone (and to docs/results-format.md, which the docs test holds to it).
#pragma once

#include <cstddef>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "io/case_table.hpp"
#include "io/result_model.hpp"

namespace gpuscale {

// The member of RankRecord a column holds; its type gives the dataset's: a string a string column,
// an int or a flag (bool: 0 or 1) int64, a double float64.
using RankMember =
    std::variant<std::string RankRecord::*, int RankRecord::*, bool RankRecord::*, double RankRecord::*>;

// The type of a RankMember's values: RankValue<int RankRecord::*> is int.
template <class M>
struct RankValueOf;
template <class T>
struct RankValueOf<T RankRecord::*> {
  using type = T;
};
template <class M>
using RankValue = typename RankValueOf<M>::type;

// What the reader checks of an int column's values, n being the run's ranks.
enum class RankRange {
  fits,   // what the member holds: an int INT_MIN..INT_MAX; a flag any integer (0: false); strings, reals unchecked
  count,  // 0..INT_MAX
  index,  // 0..n-1
  size,   // 1..n
};

struct RankField {
  const char* name;  // the dataset in /ranks
  RankMember member;
  // The dataset whose presence says that a file has this one (a column of a later schema); nullptr: every file.
  const char* read_with = nullptr;
  RankRange range = RankRange::fits;
  // A real column's attributes (only they have any): unit, description and unitSI, the factor to the SI unit.
  const char* unit = nullptr;
  const char* description = nullptr;
  double unit_si = 1.0;
};

// Where a file's later columns start: schema 1.9 added the GPUs a rank was handed and the one it picks.
constexpr const char* kSince19GpuPick = "gpu_index";
constexpr const char* kSinceBootId = "boot_id";  // added within 1.9: a 1.9 file may lack it

// In the order they are written. The first one, hostname, says how many ranks a file has.
inline constexpr RankField kRankFields[] = {
    {"hostname", &RankRecord::hostname},
    {"node_index", &RankRecord::node_index, nullptr, RankRange::index},
    {"local_rank", &RankRecord::local_rank, nullptr, RankRange::index},
    {"local_size", &RankRecord::local_size, nullptr, RankRange::size},
    {"pid", &RankRecord::pid},
    {"device_kind", &RankRecord::device_kind},
    {"device_name", &RankRecord::device_name},
    {"device_uuid", &RankRecord::device_uuid},
    {"device_pci_bus_id", &RankRecord::device_pci_bus_id},
    {"clock_offset_start", &RankRecord::clock_offset_start_s, nullptr, RankRange::fits, "s",
     "this rank's clock minus rank 0's, estimated at the start"},
    {"clock_uncertainty_start", &RankRecord::clock_uncertainty_start_s, nullptr, RankRange::fits, "s",
     "half the least round trip of the start estimate"},
    {"clock_offset_end", &RankRecord::clock_offset_end_s, nullptr, RankRange::fits, "s",
     "this rank's clock minus rank 0's, estimated at the end (NaN until the run completes)"},
    {"clock_uncertainty_end", &RankRecord::clock_uncertainty_end_s, nullptr, RankRange::fits, "s",
     "half the least round trip of the end estimate"},
    {"clock_offset_applied", &RankRecord::clock_offset_applied_s, nullptr, RankRange::fits, "s",
     "the offset the rank's wall times are on: the start estimate, or the end one where it is better "
     "(smaller uncertainty; applied when the run completes)"},
    {"clock_uncertainty_applied", &RankRecord::clock_uncertainty_applied_s, nullptr, RankRange::fits, "s",
     "the uncertainty of clock_offset_applied"},
    {"clock_shared", &RankRecord::clock_shared},
    {"cpu_affinity", &RankRecord::cpu_affinity},
    {"cores_available", &RankRecord::cores_available, nullptr, RankRange::count},
    {"node_cores", &RankRecord::node_cores, nullptr, RankRange::count},
    {"cuda_visible_devices", &RankRecord::cuda_visible_devices},
    {"gpus_visible", &RankRecord::gpus_visible, kSince19GpuPick},
    {"gpu_index", &RankRecord::gpu_index, kSince19GpuPick},
    {"gpu_peers", &RankRecord::gpu_peers, kSince19GpuPick},
    {"telemetry", &RankRecord::telemetry},
    {"max_sm_clock", &RankRecord::max_sm_clock_mhz, nullptr, RankRange::fits, "MHz",
     "the GPU's maximum SM clock (NaN: unknown)", 1e6},
    {"max_mem_clock", &RankRecord::max_mem_clock_mhz, nullptr, RankRange::fits, "MHz",
     "the GPU's maximum memory clock (NaN: unknown)", 1e6},
    {"power_limit", &RankRecord::power_limit_w, nullptr, RankRange::fits, "W",
     "the GPU's enforced power limit (NaN: unknown)"},
    {"pcie_gen", &RankRecord::pcie_gen},
    {"pcie_width", &RankRecord::pcie_width},
    {"pcie_max_gen", &RankRecord::pcie_max_gen},
    {"pcie_max_width", &RankRecord::pcie_max_width},
    {"nvlinks_active", &RankRecord::nvlinks_active},
    {"numa_node", &RankRecord::numa_node},
    {"local_cpulist", &RankRecord::local_cpulist},
    {"boot_id", &RankRecord::boot_id, kSinceBootId},
};
constexpr std::size_t kRankFieldCount = std::size(kRankFields);
static_assert(std::string_view(kRankFields[0].name) == "hostname" &&
                  std::holds_alternative<std::string RankRecord::*>(kRankFields[0].member),
              "the first rank column, a string in every file, counts the ranks");

// The type of a field's dataset.
inline ColumnType rank_field_type(const RankField& field) {
  return std::visit(
      [](auto member) {
        using T = RankValue<decltype(member)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return ColumnType::text;
        } else if constexpr (std::is_same_v<T, double>) {
          return ColumnType::real;
        } else {
          return ColumnType::integer;
        }
      },
      field.member);
}

}  // namespace gpuscale
