#include "app/rank_table.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include "app/node_peers.hpp"

namespace gpuscale {

GpuTelemetry open_device_telemetry(const DeviceInfo& dev) {
  if (dev.kind != "cuda") return {"the CPU backend has no GPU telemetry", nullptr, {}};
  return open_gpu_telemetry(dev.pci_bus_id);  // NVML is loaded now: a machine without a driver says why
}

std::string format_gpu_facts(const std::vector<RankRecord>& table, const std::vector<LinkRecord>& links) {
  std::ostringstream os;
  auto known = [](int v) { return v >= 0 ? std::to_string(v) : std::string("?"); };
  for (std::size_t r = 0; r < table.size(); ++r) {
    const RankRecord& t = table[r];
    if (t.device_kind != "cuda") continue;
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
}  // namespace

std::vector<RankRecord> gather_rank_table(const MpiCommunicator& comm, const DeviceInfo& dev, const ClockOffset& start,
                                          const RankGpu& gpu, std::vector<LinkRecord>* links) {
  const auto host = comm.gather(comm.hostname());
  const auto node = comm.gather(comm.node_index());
  const auto lrank = comm.gather(comm.local_rank());
  const auto lsize = comm.gather(comm.local_size());
  const auto pid = comm.gather(static_cast<int>(getpid()));
  const auto kind = comm.gather(dev.kind);
  const auto name = comm.gather(dev.name);
  const auto uuid = comm.gather(dev.uuid);
  const auto pci = comm.gather(dev.pci_bus_id);
  const auto off = comm.gather(std::vector<double>{start.offset_s, start.uncertainty_s});
  const GpuStatic& gi = gpu.info;
  constexpr std::size_t kGpuNumbers = 9;
  const auto num = comm.gather(std::vector<double>{
      gi.max_sm_clock_mhz, gi.max_mem_clock_mhz, gi.power_limit_w, double(gi.pcie_gen), double(gi.pcie_width),
      double(gi.pcie_max_gen), double(gi.pcie_max_width), double(gi.nvlinks_active), double(gpu.numa_node)});
  const auto tel = comm.gather(gpu.telemetry);
  const auto cpus = comm.gather(gpu.local_cpulist);
  const auto peers = comm.gather(encode_peers(gi.peers));
  const auto [affinity, available] = cpu_affinity();
  const auto cpu_list = comm.gather(affinity);
  const auto cores = comm.gather(std::vector<double>{static_cast<double>(available),
                                                     static_cast<double>(sysconf(_SC_NPROCESSORS_ONLN)),
                                                     start.shared ? 1.0 : 0.0});
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  const auto cuda_visible = comm.gather(std::string(visible ? visible : ""));
  std::vector<RankRecord> out;
  for (std::size_t r = 0; r < host.size(); ++r) {
    RankRecord rr;
    rr.hostname = host[r];
    rr.node_index = node[r];
    rr.local_rank = lrank[r];
    rr.local_size = lsize[r];
    rr.pid = pid[r];
    rr.device_kind = kind[r];
    rr.device_name = name[r];
    rr.device_uuid = uuid[r];
    rr.device_pci_bus_id = pci[r];
    rr.clock_offset_start_s = off[2 * r];
    rr.clock_uncertainty_start_s = off[2 * r + 1];
    rr.clock_offset_end_s = rr.clock_uncertainty_end_s = std::numeric_limits<double>::quiet_NaN();
    rr.clock_shared = cores[3 * r + 2] != 0.0;
    rr.cpu_affinity = cpu_list[r];
    rr.cores_available = static_cast<int>(cores[3 * r]);
    rr.node_cores = static_cast<int>(cores[3 * r + 1]);
    rr.cuda_visible_devices = cuda_visible[r];
    const double* g = &num[kGpuNumbers * r];
    rr.telemetry = tel[r];
    rr.max_sm_clock_mhz = g[0];
    rr.max_mem_clock_mhz = g[1];
    rr.power_limit_w = g[2];
    rr.pcie_gen = static_cast<int>(g[3]);
    rr.pcie_width = static_cast<int>(g[4]);
    rr.pcie_max_gen = static_cast<int>(g[5]);
    rr.pcie_max_width = static_cast<int>(g[6]);
    rr.nvlinks_active = static_cast<int>(g[7]);
    rr.numa_node = static_cast<int>(g[8]);
    rr.local_cpulist = cpus[r];
    if (links) decode_peers(static_cast<int>(r), peers[r], *links);
    out.push_back(rr);
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
