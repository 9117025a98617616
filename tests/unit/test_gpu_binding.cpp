// What each node's ranks were handed in GPUs and what gpuscale makes of it, from made-up rank tables: the GPU a rank
// picks by local rank, the per-node map, and the warnings when GPUs sit idle or each rank sees one GPU only.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "app/gpu_binding.hpp"
#include "app/rank_table.hpp"

using namespace gpuscale;

namespace {

// `ranks` ranks on each of `hosts`, every rank seeing `visible` (one string for all, or one per rank of a node).
std::vector<RankRecord> job(const std::vector<std::string>& hosts, int ranks, const std::vector<std::string>& visible) {
  std::vector<RankRecord> table;
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    for (int l = 0; l < ranks; ++l) {
      RankRecord r;
      r.hostname = hosts[h];
      r.node_index = static_cast<int>(h);
      r.local_rank = l;
      r.local_size = ranks;
      r.node_cores = 64;
      r.cuda_visible_devices = visible.size() == 1 ? visible[0] : visible[static_cast<std::size_t>(l)];
      table.push_back(r);
    }
  }
  return table;
}

const char* const kOneEach =
    "each rank sees one GPU (CUDA_VISIBLE_DEVICES per task): NCCL cannot use NVLink or PCIe peer access between "
    "ranks; intra-node busbw will read low; submit with --gpus-per-node";

}  // namespace

TEST_CASE("CUDA_VISIBLE_DEVICES is read as the CUDA runtime lists it: entries in order, unset is none",
          "[gpu_binding]") {
  CHECK(visible_gpus("0,1,2,3") == std::vector<std::string>{"0", "1", "2", "3"});
  CHECK(visible_gpus("2, 0") == std::vector<std::string>{"2", "0"});
  CHECK(visible_gpus("GPU-5a1b,MIG-77") == std::vector<std::string>{"GPU-5a1b", "MIG-77"});
  CHECK(visible_gpus("").empty());
  CHECK(visible_gpus(",").empty());
}

TEST_CASE("a rank picks the GPU at its local rank mod the GPUs it sees", "[gpu_binding]") {
  CHECK(gpu_index_by_local_rank(0, 4) == 0);
  CHECK(gpu_index_by_local_rank(3, 4) == 3);
  CHECK(gpu_index_by_local_rank(5, 4) == 1);  // 8 ranks on 4 GPUs: two per GPU (share_devices)
  CHECK(gpu_index_by_local_rank(2, 1) == 0);  // a rank that sees one GPU uses it
  CHECK(gpu_index_by_local_rank(0, 0) == -1);
}

TEST_CASE("4 ranks on a node's 4 GPUs (--gpus-per-node): one GPU each, in order, and no warning", "[gpu_binding]") {
  const auto table = job({"gpu01"}, 4, {"0,1,2,3"});
  const auto nodes = node_gpus(table);
  REQUIRE(nodes.size() == 1);
  CHECK(nodes[0].picked == std::vector<std::string>{"0", "1", "2", "3"});
  CHECK(nodes[0].handed.size() == 4);
  CHECK_FALSE(nodes[0].one_each);
  CHECK(gpu_binding_warnings(table).empty());
  CHECK(format_gpu_map(table) ==
        "  GPUs per node (CUDA_VISIBLE_DEVICES; a rank uses the GPU at local_rank mod the GPUs it sees):\n"
        "    gpu01: 4 GPU(s) handed (0,1,2,3) to 4 rank(s), 4 in use: rank 0 -> 0, rank 1 -> 1, rank 2 -> 2, "
        "rank 3 -> 3\n");
}

TEST_CASE("2 ranks on 4 GPUs leave 2 idle: one line names the node, the GPUs and the cure", "[gpu_binding]") {
  const auto table = job({"gpu01"}, 2, {"0,1,2,3"});
  CHECK(gpu_binding_warnings(table) ==
        std::vector<std::string>{"2 of 4 GPUs idle on node gpu01: 2 rank(s) use GPU(s) 0,1 of the 4 they see "
                                 "(CUDA_VISIBLE_DEVICES=0,1,2,3); run one rank per GPU (--ntasks-per-node=4, or leave "
                                 "--ntasks-per-node out of the sbatch scripts: their ranks follow the GPUs)"});
  // On 8-GPU servers with the old default of 4 ranks: one line per node.
  const auto two = job({"a", "b"}, 4, {"0,1,2,3,4,5,6,7"});
  const auto w = gpu_binding_warnings(two);
  REQUIRE(w.size() == 2);
  CHECK(w[0].rfind("4 of 8 GPUs idle on node a: 4 rank(s) use GPU(s) 0,1,2,3 of the 8 they see", 0) == 0);
  CHECK(w[1].rfind("4 of 8 GPUs idle on node b: ", 0) == 0);
}

TEST_CASE("ranks that each see one GPU (--gpus-per-task=1) get one line naming the cost and their nodes",
          "[gpu_binding]") {
  const auto table = job({"a", "b"}, 4, {"0", "1", "2", "3"});
  CHECK(gpu_binding_warnings(table) == std::vector<std::string>{std::string(kOneEach) + " (nodes a, b)"});
  CHECK(format_gpu_map(table) ==
        "  GPUs per node (CUDA_VISIBLE_DEVICES; a rank uses the GPU at local_rank mod the GPUs it sees):\n"
        "    a: each of 4 rank(s) sees one GPU: rank 0 -> 0, rank 1 -> 1, rank 2 -> 2, rank 3 -> 3\n"
        "    b: each of 4 rank(s) sees one GPU: rank 4 -> 0, rank 5 -> 1, rank 6 -> 2, rank 7 -> 3\n");
  // Devices confined per task: every rank's one GPU is its "0"; the same line, and no idle GPU is claimed.
  CHECK(gpu_binding_warnings(job({"a"}, 2, {"0"})) == std::vector<std::string>{std::string(kOneEach) + " (node a)"});
  // One rank on a node has no peer to reach: nothing to say.
  CHECK(gpu_binding_warnings(job({"a", "b"}, 1, {"0"})).empty());
}

TEST_CASE("ranks without CUDA_VISIBLE_DEVICES are not judged, and the map says why", "[gpu_binding]") {
  // A workstation under mpirun, or a CPU-only job: no variable anywhere, no map and no warning.
  CHECK(format_gpu_map(job({"ws"}, 2, {""})).empty());
  CHECK(gpu_binding_warnings(job({"ws"}, 2, {""})).empty());
  // Set on some ranks only (a node whose ranks were started differently): shown, not judged.
  auto mixed = job({"a"}, 2, {"0,1,2,3", ""});
  CHECK(gpu_binding_warnings(mixed).empty());
  CHECK(format_gpu_map(mixed) ==
        "  GPUs per node (CUDA_VISIBLE_DEVICES; a rank uses the GPU at local_rank mod the GPUs it sees):\n"
        "    a: 2 rank(s), CUDA_VISIBLE_DEVICES unset on 1 of them (not checked): rank 0 -> 0, rank 1 -> ?\n");
  auto two = job({"a", "b"}, 2, {"0,1"});
  two[2].cuda_visible_devices = two[3].cuda_visible_devices = "";
  CHECK(format_gpu_map(two).find("    b: 2 rank(s), CUDA_VISIBLE_DEVICES unset: each sees the GPUs the node lets it "
                                 "see, in the driver's order\n") != std::string::npos);
}

TEST_CASE("a run's placement warnings: oversubscribed nodes first, then the GPU binding", "[gpu_binding]") {
  auto table = job({"a"}, 2, {"0,1,2,3"});
  for (auto& r : table) r.node_cores = 1;
  const auto w = placement_warnings(table);
  REQUIRE(w.size() == 2);
  CHECK(w[0].rfind("node a: 2 ranks on 1 cores", 0) == 0);
  CHECK(w[1].rfind("2 of 4 GPUs idle on node a", 0) == 0);
  // format_gpu_facts (printed by info and run) ends with the map.
  CHECK(format_gpu_facts(table, {}) == format_gpu_map(table));
}

TEST_CASE("on the CUDA backend without CUDA_VISIBLE_DEVICES, the runtime's GPUs and each GPU's peer access fill in",
          "[gpu_binding]") {
  const std::vector<std::vector<int>> m{{1, 1, 0, 0}, {1, 1, 0, 0}, {0, 0, 1, 1}, {0, 0, 1, 1}};  // two NVLink pairs
  RankRecord r;
  r.local_rank = 2;
  with_peers(r, m);
  CHECK(r.gpus_visible == 4);
  CHECK(r.gpu_index == 2);
  CHECK(r.gpu_peers == "0,0,1,1");
  // CUDA_VISIBLE_DEVICES set: its count and pick stay; the row is of the GPU picked among those seen.
  RankRecord listed;
  listed.local_rank = 1;
  listed.gpus_visible = 2;
  listed.gpu_index = 1;
  with_peers(listed, {{1, 0}, {0, 1}});
  CHECK(listed.gpu_peers == "0,1");
  // No device (the CPU backend, a CUDA build without a driver): nothing changes.
  RankRecord none;
  with_peers(none, {});
  CHECK(none.gpus_visible == -1);
  CHECK(none.gpu_peers.empty());
}

TEST_CASE("ranks whose GPUs cannot reach each other get one line per node naming the GPUs and the cost",
          "[gpu_binding]") {
  const std::vector<std::vector<int>> m{{1, 1, 0, 0}, {1, 1, 0, 0}, {0, 0, 1, 1}, {0, 0, 1, 1}};
  auto table = job({"gpu01"}, 4, {""});
  for (auto& r : table) with_peers(r, m);
  const auto w = gpu_binding_warnings(table);
  REQUIRE(w.size() == 1);
  CHECK(w[0] == "GPUs of node gpu01 that cannot reach each other directly (no peer access: no NVLink or PCIe peer to "
                "peer between them): 0 and 2 (ranks 0, 2), 0 and 3 (ranks 0, 3), 1 and 2 (ranks 1, 2), ...; NCCL "
                "moves their data through host memory, and intra-node busbw will read low");
  CHECK(format_gpu_map(table) ==
        "  GPUs per node (CUDA_VISIBLE_DEVICES; a rank uses the GPU at local_rank mod the GPUs it sees):\n"
        "    gpu01: 4 GPU(s) listed by the CUDA runtime (0,1,2,3) to 4 rank(s), 4 in use: rank 0 -> 0, rank 1 -> 1, "
        "rank 2 -> 2, rank 3 -> 3\n"
        "      peer access of each rank's GPU to the GPUs it sees (1: reaches it): rank 0 (GPU 0): 1,1,0,0; rank 1 "
        "(GPU 1): 1,1,0,0; rank 2 (GPU 2): 0,0,1,1; rank 3 (GPU 3): 0,0,1,1\n");
  // All reach all (NVSwitch): no line. Two ranks on the runtime's 8 GPUs: 6 idle, named as the runtime's.
  auto full = job({"gpu01"}, 2, {""});
  for (auto& r : full) with_peers(r, std::vector<std::vector<int>>(8, std::vector<int>(8, 1)));
  const auto idle = gpu_binding_warnings(full);
  REQUIRE(idle.size() == 1);
  CHECK(idle[0].rfind("6 of 8 GPUs idle on node gpu01: 2 rank(s) use GPU(s) 0,1 of the 8 they see (the CUDA runtime "
                      "lists 8); ", 0) == 0);
}
