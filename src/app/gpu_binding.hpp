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

// One node's ranks and the GPUs they were handed.
struct NodeGpus {
  std::string hostname;
  std::vector<int> ranks;            // the node's ranks (in the job), in table order
  std::vector<std::string> picked;   // the GPU each of them uses, by its id in CUDA_VISIBLE_DEVICES
  std::vector<std::string> handed;   // the distinct GPUs the node's ranks see, in the order first seen
  int ranks_unset = 0;               // ranks without CUDA_VISIBLE_DEVICES: what they see is not known here
  bool one_each = false;             // several ranks, each seeing exactly one GPU (per-task binding)
};
std::vector<NodeGpus> node_gpus(const std::vector<RankRecord>& table);

// "2 of 4 GPUs idle on node X: ..." per node where the ranks use fewer GPUs than they were handed, and one line
// when the ranks of a node each see one GPU only (naming those nodes). Nodes whose ranks have no
// CUDA_VISIBLE_DEVICES are not judged.
std::vector<std::string> gpu_binding_warnings(const std::vector<RankRecord>& table);

// The per-node map: "  GPUs per node ...:" and a line per node ("N GPU(s) handed (0,1,2,3) to N rank(s): rank 0 ->
// 0, ..."); "" where no rank has CUDA_VISIBLE_DEVICES set.
std::string format_gpu_map(const std::vector<RankRecord>& table);

}  // namespace gpuscale
