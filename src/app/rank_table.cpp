#include "app/rank_table.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <tuple>
#include <type_traits>
#include <variant>

#include "app/end_watch.hpp"
#include "app/gpu_binding.hpp"
#include "device/cuda_status.hpp"
#include "io/rank_fields.hpp"

namespace gpuscale {

GpuTelemetry open_device_telemetry(const DeviceInfo& dev) {
  if (dev.kind != Backend::cuda) return {"the CPU backend has no GPU telemetry", nullptr, {}};
  return open_gpu_telemetry(dev.pci_bus_id);  // NVML is loaded now: a machine without a driver says why
}

std::string format_gpu_facts(const std::vector<RankRecord>& table, const std::vector<LinkRecord>& links) {
  std::ostringstream os;
  auto known = [](int v) { return v >= 0 ? std::to_string(v) : std::string("?"); };
  for (std::size_t r = 0; r < table.size(); ++r) {
    const RankRecord& t = table[r];
    if (t.device_kind != backend_name(Backend::cuda)) continue;
    os << "  rank " << r << " GPU " << t.device_pci_bus_id << ": telemetry " << t.telemetry;
    if (t.telemetry == "nvml") {
      os << "; PCIe gen " << known(t.pcie_gen) << " x" << known(t.pcie_width) << " (max gen " << known(t.pcie_max_gen)
         << " x" << known(t.pcie_max_width) << "); NVLinks up " << known(t.nvlinks_active);
      if (std::isfinite(t.max_sm_clock_mhz)) os << "; max SM clock " << t.max_sm_clock_mhz << " MHz";
      if (std::isfinite(t.power_limit_w)) os << "; power limit " << t.power_limit_w << " W";
    }
    os << "; NUMA node " << known(t.numa_node) << (t.local_cpulist.empty() ? "" : ", CPUs " + t.local_cpulist) << "\n";
    for (const auto& l : links) {
      if (l.rank != static_cast<int>(r)) continue;
      os << "    to " << l.peer_pci_bus_id << ": " << l.nvlinks << " NVLink(s), common ancestor "
         << (l.common_ancestor.empty() ? "?" : l.common_ancestor) << "\n";
    }
  }
  os << format_gpu_map(table);
  return os.str();
}

RankGpu rank_gpu(const DeviceInfo& dev, const GpuTelemetry& telemetry) {
  RankGpu g;
  g.telemetry = telemetry.source ? "nvml" : "not available: " + telemetry.unavailable;
  g.info = telemetry.info;
  if (!dev.pci_bus_id.empty()) {
    g.numa_node = pci_numa_node(dev.pci_bus_id);
    g.local_cpulist = pci_local_cpulist(dev.pci_bus_id);
  }
  return g;
}

namespace {
// This process's CPU affinity as a list ("0-3,8") and its size.
std::pair<std::string, int> cpu_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return {"", 0};
  std::string list;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    int last = c;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set)) ++last;
    list += (list.empty() ? "" : ",") + std::to_string(c) + (last > c ? "-" + std::to_string(last) : "");
    c = last;
  }
  return {list, CPU_COUNT(&set)};
}

// Peers as "bus id|nvlinks|ancestor" lines, to travel in one gathered string.
std::string encode_peers(const std::vector<PeerLink>& peers) {
  std::string s;
  for (const auto& p : peers) s += p.pci_bus_id + "|" + std::to_string(p.nvlinks) + "|" + p.common_ancestor + "\n";
  return s;
}

void decode_peers(int rank, const std::string& s, std::vector<LinkRecord>& out) {
  std::istringstream lines(s);
  std::string line;
  while (std::getline(lines, line)) {
    const auto a = line.find('|'), b = line.find('|', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    out.push_back({rank, line.substr(0, a), std::stoi(line.substr(a + 1, b - a - 1)), line.substr(b + 1)});
  }
}

// `rr` with what the rank knows of its GPU.
RankRecord with_gpu(RankRecord rr, const RankGpu& gpu) {
  const GpuStatic& gi = gpu.info;
  rr.telemetry = gpu.telemetry;
  rr.max_sm_clock_mhz = gi.max_sm_clock_mhz;
  rr.max_mem_clock_mhz = gi.max_mem_clock_mhz;
  rr.power_limit_w = gi.power_limit_w;
  rr.pcie_gen = gi.pcie_gen;
  rr.pcie_width = gi.pcie_width;
  rr.pcie_max_gen = gi.pcie_max_gen;
  rr.pcie_max_width = gi.pcie_max_width;
  rr.nvlinks_active = gi.nvlinks_active;
  rr.numa_node = gpu.numa_node;
  rr.local_cpulist = gpu.local_cpulist;
  return rr;
}

// This rank's row of the table: where it runs, its device, its start clock estimate (the end one not yet known).
RankRecord own_rank(const MpiCommunicator& comm, const DeviceInfo& dev, const ClockOffset& start, const RankGpu& gpu) {
  RankRecord rr;
  rr.hostname = comm.hostname();
  rr.node_index = comm.node_index();
  rr.local_rank = comm.local_rank();
  rr.local_size = comm.local_size();
  rr.pid = static_cast<int>(getpid());
  rr.device_kind = backend_name(dev.kind);
  rr.device_name = dev.name;
  rr.device_uuid = dev.uuid;
  rr.device_pci_bus_id = dev.pci_bus_id;
  rr.clock_offset_start_s = start.offset_s;
  rr.clock_uncertainty_start_s = start.uncertainty_s;
  rr.clock_offset_end_s = rr.clock_uncertainty_end_s = std::numeric_limits<double>::quiet_NaN();
  rr.clock_shared = start.shared;
  std::tie(rr.cpu_affinity, rr.cores_available) = cpu_affinity();
  rr.node_cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::getline(boot, rr.boot_id);
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  rr.cuda_visible_devices = visible ? visible : "";
  if (visible) {
    rr.gpus_visible = static_cast<int>(visible_gpus(rr.cuda_visible_devices).size());
    rr.gpu_index = gpu_index_by_local_rank(rr.local_rank, rr.gpus_visible);
  }
  if (dev.kind == Backend::cuda) with_peers(rr, peer_access_matrix());
  return with_gpu(rr, gpu);
}

}  // namespace

PackedRank pack_rank(const RankRecord& row) {
  PackedRank p;
  for (const RankField& field : kRankFields) {
    std::visit(
        [&](auto member) {
          if constexpr (std::is_same_v<RankValue<decltype(member)>, std::string>) {
            p.numbers.push_back(static_cast<double>((row.*member).size()));
            p.texts += row.*member;
          } else {
            p.numbers.push_back(static_cast<double>(row.*member));
          }
        },
        field.member);
  }
  return p;
}

RankRecord unpack_rank(const double* numbers, const std::string& texts) {
  RankRecord row;
  std::size_t at = 0;
  for (std::size_t i = 0; i < kRankFieldCount; ++i) {
    std::visit(
        [&](auto member) {
          using T = RankValue<decltype(member)>;
          if constexpr (std::is_same_v<T, std::string>) {
            const auto size = static_cast<std::size_t>(numbers[i]);
            row.*member = texts.substr(at, size);
            at += size;
          } else {
            row.*member = static_cast<T>(numbers[i]);
          }
        },
        kRankFields[i].member);
  }
  return row;
}

std::vector<RankRecord> gather_rank_table(const MpiCommunicator& comm, const DeviceInfo& dev, const ClockOffset& start,
                                          const RankGpu& gpu, std::vector<LinkRecord>* links) {
  const PackedRank mine = pack_rank(own_rank(comm, dev, start, gpu));
  const auto numbers = comm.gather(mine.numbers);
  const auto texts = comm.gather(mine.texts);
  const auto peers = comm.gather(encode_peers(gpu.info.peers));
  std::vector<RankRecord> out;
  for (std::size_t r = 0; r < texts.size(); ++r) {
    out.push_back(unpack_rank(&numbers[kRankFieldCount * r], texts[r]));
    if (links) decode_peers(static_cast<int>(r), peers[r], *links);
  }
  return out;
}

void gather_end_offsets(const MpiCommunicator& comm, const ClockOffset& end, std::vector<RankRecord>& table) {
  const auto off = comm.gather(std::vector<double>{end.offset_s, end.uncertainty_s});
  for (std::size_t r = 0; r < table.size() && 2 * r + 1 < off.size(); ++r) {
    table[r].clock_offset_end_s = off[2 * r];
    table[r].clock_uncertainty_end_s = off[2 * r + 1];
  }
}

std::string shared_device_ranks(const std::vector<RankRecord>& table) {
  for (std::size_t a = 0; a < table.size(); ++a) {
    for (std::size_t b = a + 1; b < table.size(); ++b) {
      if (!table[a].device_uuid.empty() && table[a].device_uuid == table[b].device_uuid &&
          table[a].node_index == table[b].node_index) {
        return "ranks " + std::to_string(a) + " and " + std::to_string(b) + " on " + table[a].hostname +
               " share GPU " + table[a].device_uuid;
      }
    }
  }
  return "";
}

std::vector<std::string> oversubscription_warnings(const std::vector<RankRecord>& table) {
  std::vector<std::string> out;
  for (std::size_t r = 0; r < table.size(); ++r) {
    const RankRecord& t = table[r];
    if (t.local_rank != 0 || t.node_cores <= 0 || t.local_size <= t.node_cores) continue;  // one line per node
    out.push_back("node " + t.hostname + ": " + std::to_string(t.local_size) + " ranks on " +
                  std::to_string(t.node_cores) +
                  " cores: ranks that run at once compete for cores, so parallel times and speedups understate what "
                  "the hardware can do");
  }
  return out;
}

std::vector<std::string> placement_warnings(const std::vector<RankRecord>& table) {
  std::vector<std::string> out = oversubscription_warnings(table);
  for (auto& w : gpu_binding_warnings(table)) out.push_back(std::move(w));
  return out;
}

std::string shared_device_error(const std::vector<RankRecord>& table) {
  const std::string shared = shared_device_ranks(table);
  if (shared.empty()) return "";
  return shared + " (more ranks on the node than visible GPUs); start one rank per GPU, or set share_devices = true "
                  "in [defaults]";
}

namespace {

// Whether the process `pid` of this node has ended: no /proc entry, or one of a zombie.
bool process_ended(int pid) { return process_state(pid) == 0; }

}  // namespace

std::string ended_peer(const std::vector<RankRecord>& table) {
  for (std::size_t r = 1; r < table.size(); ++r) {
    const RankRecord& t = table[r];
    if (t.hostname != table[0].hostname || t.pid <= 0 || !process_ended(t.pid)) continue;
    return "rank " + std::to_string(r) + " (pid " + std::to_string(t.pid) + " on " + t.hostname + ")";
  }
  return "";
}

std::string format_rank_table(const std::vector<RankRecord>& table) {
  std::vector<std::vector<std::string>> cells{{"rank", "host", "node", "local", "device", "name", "clock offset"}};
  for (std::size_t r = 0; r < table.size(); ++r) {
    const auto& t = table[r];
    std::ostringstream off;
    off.precision(3);
    if (t.clock_shared) {
      off << "0 (rank 0's clock)";
    } else {
      off << t.clock_offset_start_s * 1e6 << " +- " << t.clock_uncertainty_start_s * 1e6 << " us";
    }
    cells.push_back({std::to_string(r), t.hostname, std::to_string(t.node_index),
                     std::to_string(t.local_rank) + "/" + std::to_string(t.local_size), t.device_kind,
                     t.device_name + (t.device_uuid.empty() ? "" : " " + t.device_uuid + " " + t.device_pci_bus_id),
                     off.str()});
  }
  std::vector<std::size_t> w(cells[0].size(), 0);
  for (const auto& row : cells) {
    for (std::size_t i = 0; i < row.size(); ++i) w[i] = std::max(w[i], row[i].size());
  }
  std::ostringstream os;
  for (const auto& row : cells) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i] + std::string(w[i] - row[i].size() + 2, ' ');
    }
    line.erase(line.find_last_not_of(' ') + 1);
    os << "  " << line << "\n";
  }
  return os.str();
}

namespace {

// "rank 3", "ranks 0-3, 6": ascending rank numbers, runs of consecutive ones as a range.
std::string rank_list(const std::vector<std::size_t>& ranks) {
  std::string s;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    s += (i ? ", " : "") + std::to_string(ranks[i]) + (j > i ? "-" + std::to_string(ranks[j]) : "");
    i = j + 1;
  }
  return (ranks.size() == 1 ? "rank " : "ranks ") + s;
}

}  // namespace

std::string format_rank_notes(const std::string& head, const std::vector<std::string>& notes) {
  std::vector<std::pair<std::string, std::vector<std::size_t>>> distinct;  // in the order of their first rank
  for (std::size_t r = 0; r < notes.size(); ++r) {
    auto it = std::find_if(distinct.begin(), distinct.end(), [&](const auto& d) { return d.first == notes[r]; });
    if (it == distinct.end()) it = distinct.insert(distinct.end(), {notes[r], {}});
    it->second.push_back(r);
  }
  if (distinct.size() == 1) return "  " + head + ": " + distinct[0].first + "\n";
  std::string s;
  for (const auto& [note, ranks] : distinct) s += "  " + head + " of " + rank_list(ranks) + ": " + note + "\n";
  return s;
}

}  // namespace gpuscale
