// What each node's ranks were handed in GPUs (CUDA_VISIBLE_DEVICES, as Slurm or mpirun set it) and what gpuscale
// makes of it (each rank uses the GPU at local_rank mod the GPUs it sees): the per-node map `info` and `run` print,
// and the warnings when GPUs sit idle or each rank sees one GPU only (no NVLink or peer access between ranks).
// Read from the rank table alone, so the CPU backend checks the same binding a GPU run would get.
#pragma once

#include <string>
#include <vector>

#include "io/result_model.hpp"

namespace gpuscale {

// The entries of CUDA_VISIBLE_DEVICES ("0,1,2,3", GPU or MIG UUIDs) in order; {} where it is unset or empty.
std::vector<std::string> visible_gpus(const std::string& cuda_visible_devices);

// The index among the GPUs a rank sees that it uses: local_rank mod their number, as the CUDA backend picks its
// device; -1 where it sees none (or the variable is unset: which GPUs it sees is then not known here).
int gpu_index_by_local_rank(int local_rank, int gpus_seen);

// `rr` completed from the CUDA runtime's peer matrix of the GPUs the rank sees (peer_access_matrix: [i][j] 1 where
// GPU i reaches GPU j): where CUDA_VISIBLE_DEVICES is unset, those GPUs are the runtime's (gpus_visible, and
// gpu_index by local rank); gpu_peers is its own GPU's row ("1,1,0,1"). Nothing where the matrix is empty.
void with_peers(RankRecord& rr, const std::vector<std::vector<int>>& matrix);

// One node's ranks and the GPUs they were handed.
struct NodeGpus {
  std::string hostname;
  std::vector<int> ranks;            // the node's ranks (in the job), in table order
  std::vector<std::string> picked;   // the GPU each of them uses, by its id in CUDA_VISIBLE_DEVICES (else ordinal)
  std::vector<std::string> peers;    // each one's gpu_peers ("" not known)
  std::vector<int> index;            // each one's gpu_index among the GPUs it sees (-1 none)
  std::vector<std::string> lists;    // the GPUs each one sees, as one string (ranks that see the same list match)
  bool listed = true;                // the GPUs come from CUDA_VISIBLE_DEVICES (else: the CUDA runtime's count)
  std::vector<std::string> handed;   // the distinct GPUs the node's ranks see, in the order first seen
  int ranks_unset = 0;               // ranks whose GPUs are not known (no CUDA_VISIBLE_DEVICES, not on CUDA)
  bool one_each = false;             // several ranks, each seeing exactly one GPU (per-task binding)
};
std::vector<NodeGpus> node_gpus(const std::vector<RankRecord>& table);

// "2 of 4 GPUs idle on node X: ..." per node where the ranks use fewer GPUs than they were handed, one line when the
// ranks of a node each see one GPU only (naming those nodes), and one per node where two of its ranks use GPUs
// that cannot reach each other (gpu_peers). Nodes whose ranks' GPUs are not known (no CUDA_VISIBLE_DEVICES, not the
// CUDA backend) are not judged.
std::vector<std::string> gpu_binding_warnings(const std::vector<RankRecord>& table);

// The per-node map: "  GPUs per node ...:" and a line per node ("N GPU(s) handed (0,1,2,3) to N rank(s): rank 0 ->
// 0, ..."); "" where no rank has CUDA_VISIBLE_DEVICES set.
std::string format_gpu_map(const std::vector<RankRecord>& table);

}  // namespace gpuscale
