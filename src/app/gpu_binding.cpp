#include "app/gpu_binding.hpp"

#include <algorithm>
#include <sstream>

#include "core/text.hpp"

namespace gpuscale {

std::vector<std::string> visible_gpus(const std::string& cuda_visible_devices) {
  std::vector<std::string> out;
  std::istringstream in(cuda_visible_devices);
  std::string entry;
  while (std::getline(in, entry, ',')) {
    entry.erase(0, entry.find_first_not_of(" \t"));
    entry.erase(entry.find_last_not_of(" \t") + 1);
    if (!entry.empty()) out.push_back(entry);
  }
  return out;
}

int gpu_index_by_local_rank(int local_rank, int gpus_seen) {
  if (gpus_seen <= 0 || local_rank < 0) return -1;
  return local_rank % gpus_seen;
}

void with_peers(RankRecord& rr, const std::vector<std::vector<int>>& matrix) {
  if (matrix.empty()) return;
  if (rr.gpus_visible < 0) {  // no CUDA_VISIBLE_DEVICES: the GPUs the runtime lists
    rr.gpus_visible = static_cast<int>(matrix.size());
    rr.gpu_index = gpu_index_by_local_rank(rr.local_rank, rr.gpus_visible);
  }
  if (rr.gpu_index < 0 || rr.gpu_index >= static_cast<int>(matrix.size())) return;
  rr.gpu_peers.clear();
  for (int can : matrix[static_cast<std::size_t>(rr.gpu_index)]) rr.gpu_peers += (rr.gpu_peers.empty() ? "" : ",") +
                                                                               std::to_string(can ? 1 : 0);
}

namespace {

// A node's entry (by its index in the job), added in the order nodes first appear.
struct NodeEntry {
  int node_index;
  NodeGpus gpus;
  std::vector<int> seen;  // how many GPUs each rank sees
};

// The GPUs a rank sees: CUDA_VISIBLE_DEVICES's entries, else (the CUDA runtime's count, recorded on the CUDA
// backend) their ordinals "0", "1", ...; none where neither is known.
std::vector<std::string> seen_gpus(const RankRecord& t) {
  auto gpus = visible_gpus(t.cuda_visible_devices);
  if (gpus.empty() && t.cuda_visible_devices.empty()) {
    for (int i = 0; i < t.gpus_visible; ++i) gpus.push_back(std::to_string(i));
  }
  return gpus;
}

void add_rank(NodeEntry& n, int rank, const RankRecord& t) {
  const auto gpus = seen_gpus(t);
  const int pick = gpu_index_by_local_rank(t.local_rank, static_cast<int>(gpus.size()));
  n.gpus.ranks.push_back(rank);
  n.gpus.picked.push_back(pick < 0 ? "" : gpus[static_cast<std::size_t>(pick)]);
  n.gpus.peers.push_back(t.gpu_peers);
  n.gpus.index.push_back(pick);
  n.gpus.lists.push_back(join(gpus, ","));
  if (!gpus.empty() && t.cuda_visible_devices.empty()) n.gpus.listed = false;
  n.seen.push_back(static_cast<int>(gpus.size()));
  if (gpus.empty()) ++n.gpus.ranks_unset;
  for (const auto& g : gpus) {
    if (std::find(n.gpus.handed.begin(), n.gpus.handed.end(), g) == n.gpus.handed.end()) n.gpus.handed.push_back(g);
  }
}

// The distinct GPUs the node's ranks use.
std::vector<std::string> used_gpus(const NodeGpus& n) {
  std::vector<std::string> used;
  for (const auto& p : n.picked) {
    if (!p.empty() && std::find(used.begin(), used.end(), p) == used.end()) used.push_back(p);
  }
  return used;
}

// "rank 0 -> 0, rank 1 -> 1": the GPU each rank of the node uses.
std::string rank_picks(const NodeGpus& n) {
  std::vector<std::string> items;
  for (std::size_t i = 0; i < n.ranks.size(); ++i) {
    items.push_back("rank " + std::to_string(n.ranks[i]) + " -> " + (n.picked[i].empty() ? "?" : n.picked[i]));
  }
  return join(items, ", ");
}

std::string idle_warning(const NodeGpus& n) {
  if (n.ranks_unset > 0 || n.one_each) return "";
  const auto used = used_gpus(n);
  if (used.size() >= n.handed.size()) return "";
  const std::string handed = std::to_string(n.handed.size());
  return std::to_string(n.handed.size() - used.size()) + " of " + handed + " GPUs idle on node " + n.hostname + ": " +
         std::to_string(n.ranks.size()) + " rank(s) use GPU(s) " + join(used, ",") + " of the " + handed +
         " they see (" + (n.listed ? "CUDA_VISIBLE_DEVICES=" + join(n.handed, ",") : "the CUDA runtime lists " +
         handed) + "); run one rank per GPU (--ntasks-per-node=" + handed +
         ", or leave --ntasks-per-node out of the sbatch scripts: their ranks follow the GPUs)";
}

// Whether rank a's GPU reaches rank b's, by a's gpu_peers: 1 yes, 0 no, -1 not known (either unknown, or the two
// see different lists of GPUs, whose indices do not compare).
int reaches(const NodeGpus& n, std::size_t a, std::size_t b) {
  if (n.peers[a].empty() || n.index[b] < 0 || n.lists[a] != n.lists[b]) return -1;
  const auto row = visible_gpus(n.peers[a]);
  const auto at = static_cast<std::size_t>(n.index[b]);
  return at < row.size() ? (row[at] == "1" ? 1 : 0) : -1;
}

// "GPUs 0 and 2 of node X cannot reach each other ..." where two of its ranks use GPUs without peer access.
std::string peer_warning(const NodeGpus& n) {
  std::vector<std::string> pairs;
  for (std::size_t a = 0; a < n.ranks.size(); ++a) {
    for (std::size_t b = a + 1; b < n.ranks.size(); ++b) {
      if (n.picked[a] == n.picked[b] || (reaches(n, a, b) != 0 && reaches(n, b, a) != 0)) continue;
      pairs.push_back(n.picked[a] + " and " + n.picked[b] + " (ranks " + std::to_string(n.ranks[a]) + ", " +
                      std::to_string(n.ranks[b]) + ")");
    }
  }
  if (pairs.empty()) return "";
  const std::size_t shown = std::min<std::size_t>(pairs.size(), 3);
  std::vector<std::string> head(pairs.begin(), pairs.begin() + static_cast<std::ptrdiff_t>(shown));
  return "GPUs of node " + n.hostname + " that cannot reach each other directly (no peer access: no NVLink or PCIe "
         "peer to peer between them): " + join(head, ", ") + (pairs.size() > shown ? ", ..." : "") +
         "; NCCL moves their data through host memory, and intra-node busbw will read low";
}

}  // namespace

std::vector<NodeGpus> node_gpus(const std::vector<RankRecord>& table) {
  std::vector<NodeEntry> nodes;
  for (std::size_t r = 0; r < table.size(); ++r) {
    const RankRecord& t = table[r];
    auto it =
        std::find_if(nodes.begin(), nodes.end(), [&](const NodeEntry& n) { return n.node_index == t.node_index; });
    if (it == nodes.end()) {
      it = nodes.insert(nodes.end(), NodeEntry{t.node_index, {}, {}});
      it->gpus.hostname = t.hostname;
    }
    add_rank(*it, static_cast<int>(r), t);
  }
  std::vector<NodeGpus> out;
  for (auto& n : nodes) {
    n.gpus.one_each = n.seen.size() > 1 && std::all_of(n.seen.begin(), n.seen.end(), [](int s) { return s == 1; });
    out.push_back(std::move(n.gpus));
  }
  return out;
}

std::vector<std::string> gpu_binding_warnings(const std::vector<RankRecord>& table) {
  std::vector<std::string> out, one_each;
  for (const NodeGpus& n : node_gpus(table)) {
    if (const std::string idle = idle_warning(n); !idle.empty()) out.push_back(idle);
    if (const std::string peers = peer_warning(n); !peers.empty()) out.push_back(peers);
    if (n.one_each) one_each.push_back(n.hostname);
  }
  if (!one_each.empty()) {
    out.push_back("each rank sees one GPU (CUDA_VISIBLE_DEVICES per task): NCCL cannot use NVLink or PCIe peer "
                  "access between ranks; intra-node busbw will read low; submit with --gpus-per-node (node" +
                  std::string(one_each.size() > 1 ? "s " : " ") + join(one_each, ", ") + ")");
  }
  return out;
}

namespace {

std::string node_line(const NodeGpus& n) {
  const std::string ranks = std::to_string(n.ranks.size()) + " rank(s)";
  if (n.ranks_unset == static_cast<int>(n.ranks.size())) {
    return ranks + ", CUDA_VISIBLE_DEVICES unset: each sees the GPUs the node lets it see, in the driver's order";
  }
  if (n.ranks_unset > 0) {
    return ranks + ", CUDA_VISIBLE_DEVICES unset on " + std::to_string(n.ranks_unset) + " of them (not checked): " +
           rank_picks(n);
  }
  if (n.one_each) return "each of " + ranks + " sees one GPU: " + rank_picks(n);
  return std::to_string(n.handed.size()) + " GPU(s) " + (n.listed ? "handed" : "listed by the CUDA runtime") + " (" +
         join(n.handed, ",") + ") to " + ranks + ", " + std::to_string(used_gpus(n).size()) +
         " in use: " + rank_picks(n);
}

// "rank 0 (GPU 0): 1,1,0,1; ...": which GPUs each rank's GPU reaches directly; "" where no rank's is known.
std::string peer_line(const NodeGpus& n) {
  std::vector<std::string> items;
  for (std::size_t i = 0; i < n.ranks.size(); ++i) {
    if (n.peers[i].empty()) continue;
    items.push_back("rank " + std::to_string(n.ranks[i]) + " (GPU " + n.picked[i] + "): " + n.peers[i]);
  }
  if (items.empty()) return "";
  return "peer access of each rank's GPU to the GPUs it sees (1: reaches it): " + join(items, "; ");
}

}  // namespace

std::string format_gpu_map(const std::vector<RankRecord>& table) {
  const auto nodes = node_gpus(table);
  const bool any = std::any_of(nodes.begin(), nodes.end(),
                               [](const NodeGpus& n) { return n.ranks_unset < static_cast<int>(n.ranks.size()); });
  if (!any) return "";
  std::ostringstream os;
  os << "  GPUs per node (CUDA_VISIBLE_DEVICES; a rank uses the GPU at local_rank mod the GPUs it sees):\n";
  for (const NodeGpus& n : nodes) {
    os << "    " << n.hostname << ": " << node_line(n) << "\n";
    if (const std::string peers = peer_line(n); !peers.empty()) os << "      " << peers << "\n";
  }
  return os.str();
}

}  // namespace gpuscale
