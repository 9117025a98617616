// Which algorithm Open MPI 4.1's tuned component runs for a collective, from the settings a run read from the
// library, and the steps and wire bytes the model gives each algorithm.
#include <catch2/catch.hpp>

#include "model/model.hpp"
#include "model/mpi_algorithm.hpp"

using namespace gpuscale;

namespace {

const std::string kOpenMpi = "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022";
const double kMiB = 1048576;

// What a run of Open MPI 4.1.4 as Debian ships it reads: tuned at 30, the others below it.
MpiSettings defaults() {
  return {{"coll", ""},
          {"coll_tuned_priority", "30"},
          {"coll_tuned_use_dynamic_rules", "0"},
          {"coll_tuned_dynamic_rules_filename", ""},
          {"coll_tuned_allreduce_algorithm", "0"},
          {"coll_tuned_allgather_algorithm", "0"},
          {"coll_han_priority", "0"},
          {"coll_adapt_priority", "0"}};
}

MpiSettings with(MpiSettings s, const std::string& name, const std::string& value) {
  for (auto& kv : s) {
    if (kv.first == name) kv.second = value;
  }
  return s;
}

}  // namespace

TEST_CASE("Open MPI 4.1's fixed rules: allreduce and allgather by ranks and bytes", "[mpi_algorithm]") {
  const MpiSettings s = defaults();
  // Up to 3 ranks: recursive doubling, ring, segmented ring below 256 KiB, Rabenseifner from there.
  CHECK(mpi_algorithm(kOpenMpi, s, "allreduce", 2, 1024) == "recursive_doubling");
  CHECK(mpi_algorithm(kOpenMpi, s, "allreduce", 3, 32768) == "ring");
  CHECK(mpi_algorithm(kOpenMpi, s, "allreduce", 3, 131072) == "segmented_ring");
  CHECK(mpi_algorithm(kOpenMpi, s, "allreduce", 2, kMiB) == "rabenseifner");
  // 4 to 7 ranks: Rabenseifner from 8 KiB.
  CHECK(mpi_algorithm(kOpenMpi, s, "allreduce", 4, 4096) == "recursive_doubling");
  CHECK(mpi_algorithm(kOpenMpi, s, "allreduce", 4, 8192) == "rabenseifner");
  // allgather: the two-process exchange on 2, recursive doubling below 32 (Bruck where not a power of two).
  CHECK(mpi_algorithm(kOpenMpi, s, "allgather", 2, kMiB) == "two_proc");
  CHECK(mpi_algorithm(kOpenMpi, s, "allgather", 3, kMiB) == "bruck");
  CHECK(mpi_algorithm(kOpenMpi, s, "allgather", 4, kMiB) == "recursive_doubling");
  // On 32 to 63 ranks by the bytes each rank sends: a 64 MiB total on 32 ranks is 2 MiB each, a ring.
  CHECK(mpi_algorithm(kOpenMpi, s, "allgather", 32, 64 * kMiB) == "ring");
  CHECK(mpi_algorithm(kOpenMpi, s, "allgather", 32, 16 * 1024) == "recursive_doubling");
}

TEST_CASE("a forced algorithm counts only with dynamic rules on, and falls back as coll/base does",
          "[mpi_algorithm]") {
  const MpiSettings ring = with(defaults(), "coll_tuned_allreduce_algorithm", "4");
  CHECK(mpi_algorithm(kOpenMpi, ring, "allreduce", 4, kMiB) == "rabenseifner");  // ignored without dynamic rules
  const MpiSettings dynamic = with(ring, "coll_tuned_use_dynamic_rules", "1");
  CHECK(mpi_algorithm(kOpenMpi, dynamic, "allreduce", 4, kMiB) == "ring");
  CHECK(mpi_algorithm_source(dynamic, "allreduce") == "Open MPI 4.1's tuned (coll_tuned_allreduce_algorithm=4)");
  CHECK(mpi_algorithm_source(dynamic, "allgather") == "Open MPI 4.1's tuned (fixed rules)");
  const MpiSettings rd = with(with(defaults(), "coll_tuned_use_dynamic_rules", "1"), "coll_tuned_allgather_algorithm",
                              "3");
  CHECK(mpi_algorithm(kOpenMpi, rd, "allgather", 3, kMiB) == "bruck");  // recursive doubling needs a power of two
  const MpiSettings neighbor = with(rd, "coll_tuned_allgather_algorithm", "5");
  CHECK(mpi_algorithm(kOpenMpi, neighbor, "allgather", 3, kMiB) == "ring");
  CHECK(mpi_algorithm(kOpenMpi, neighbor, "allgather", 4, kMiB) == "neighbor");
  const MpiSettings two = with(rd, "coll_tuned_allgather_algorithm", "6");
  CHECK(mpi_algorithm(kOpenMpi, two, "allgather", 4, kMiB) == "recursive_doubling");  // the fixed rules' pick
  // Basic linear has no cost here: not known, rather than guessed.
  CHECK(mpi_algorithm(kOpenMpi, with(dynamic, "coll_tuned_allreduce_algorithm", "1"), "allreduce", 4, kMiB).empty());
}

TEST_CASE("no algorithm is named where tuned is not in charge, or the library or op is another", "[mpi_algorithm]") {
  const MpiSettings s = defaults();
  CHECK(mpi_algorithm("MPICH Version:\t4.0.2", s, "allreduce", 4, kMiB).empty());
  CHECK(mpi_algorithm("Open MPI v5.0.3", s, "allreduce", 4, kMiB).empty());
  CHECK(mpi_algorithm(kOpenMpi, {}, "allreduce", 4, kMiB).empty());  // a file that read no settings
  CHECK(mpi_algorithm(kOpenMpi, with(s, "coll_han_priority", "35"), "allreduce", 4, kMiB).empty());
  CHECK(mpi_algorithm(kOpenMpi, with(s, "coll", "^tuned"), "allreduce", 4, kMiB).empty());
  CHECK(mpi_algorithm(kOpenMpi, with(s, "coll", "basic,self"), "allreduce", 4, kMiB).empty());
  CHECK(mpi_algorithm(kOpenMpi, with(s, "coll", "tuned,basic,self"), "allreduce", 4, kMiB) == "rabenseifner");
  const MpiSettings rules = with(with(s, "coll_tuned_use_dynamic_rules", "1"), "coll_tuned_dynamic_rules_filename",
                                 "/etc/rules.conf");
  CHECK(mpi_algorithm(kOpenMpi, rules, "allreduce", 4, kMiB).empty());
  CHECK(mpi_algorithm(kOpenMpi, s, "sendrecv", 4, kMiB).empty());
  CHECK(mpi_algorithm(kOpenMpi, s, "reduce_scatter", 4, kMiB).empty());
  CHECK(mpi_algorithm(kOpenMpi, s, "allreduce", 1, kMiB).empty());
}

TEST_CASE("each algorithm's steps and wire bytes, and the ring where none is known", "[mpi_algorithm]") {
  // Rabenseifner on a power of two moves what the ring moves, in 2 log2 n steps.
  const auto r4 = algorithm_schedule("allreduce", "rabenseifner", 4);
  REQUIRE(r4);
  CHECK(r4->steps == 4);
  CHECK(r4->wire_per_byte == Approx(1.5));
  // On 3 ranks rank 0 first takes in rank 1's half (half a buffer out, half in, then half back), and sends it the
  // whole result last: 3 buffers where the ring moves 4/3.
  const auto r3 = algorithm_schedule("allreduce", "rabenseifner", 3);
  REQUIRE(r3);
  CHECK(r3->wire_per_byte == Approx(3.0));
  CHECK(r3->steps == 5);
  CHECK(algorithm_schedule("allreduce", "recursive_doubling", 4)->wire_per_byte == 2);
  CHECK(algorithm_schedule("allreduce", "ring", 4)->wire_per_byte == Approx(1.5));
  CHECK(algorithm_schedule("allgather", "bruck", 3)->steps == 2);
  CHECK(algorithm_schedule("allgather", "two_proc", 2)->wire_per_byte == 0.5);
  CHECK_FALSE(algorithm_schedule("allreduce", "", 4));
  CHECK_FALSE(algorithm_schedule("sendrecv", "ring", 4));
  // The model's row takes the algorithm's, and the ring with nccl-tests' bus factor without one.
  const auto row = transfer_row("allreduce", 3, 3, 1000, 4.0 / 3, "rabenseifner");
  CHECK(row[kSecPerByteInter] == Approx(3000));
  CHECK(row[kAlphaInter] == 5);
  const auto ring = transfer_row("allreduce", 3, 3, 1000, 4.0 / 3);
  CHECK(ring[kSecPerByteInter] == Approx(4000.0 / 3));
  CHECK(ring[kAlphaInter] == 4);
}

TEST_CASE("the largest message of a step against the TCP eager limit: eager or rendezvous", "[mpi_algorithm]") {
  const MpiSettings tcp = {{"pml", "ob1"}, {"btl_tcp_eager_limit", "65536"}};
  // Rabenseifner on 4 ranks exchanges halves first: 512 KiB of a 1 MiB allreduce.
  CHECK(mpi_protocol(tcp, "allreduce", "rabenseifner", 4, 4, kMiB) == "rendezvous");
  CHECK(mpi_protocol(tcp, "allreduce", "rabenseifner", 4, 4, 131072) == "eager");
  // On 3 ranks the folded rank gets the whole result last.
  CHECK(mpi_protocol(tcp, "allreduce", "rabenseifner", 3, 3, 65536 + 8) == "rendezvous");
  CHECK(mpi_protocol(tcp, "allreduce", "ring", 4, 4, 262144) == "eager");  // 64 KiB pieces
  CHECK(mpi_protocol(tcp, "sendrecv", "", 4, 4, 65536) == "eager");
  CHECK(mpi_protocol(tcp, "sendrecv", "", 4, 4, 65537) == "rendezvous");
  // Bruck sends at most min(2^k, n - 2^k) blocks a step: one of three, two of five.
  CHECK(algorithm_schedule("allgather", "bruck", 3)->largest_message_per_byte == Approx(1.0 / 3));
  CHECK(algorithm_schedule("allgather", "bruck", 5)->largest_message_per_byte == Approx(2.0 / 5));
  // Not known: one node (shared memory has its own limit), another point-to-point layer, no limit read, an
  // algorithm without a cost.
  CHECK(mpi_protocol(tcp, "allreduce", "rabenseifner", 4, 1, kMiB).empty());
  CHECK(mpi_protocol({{"pml", "ucx"}, {"btl_tcp_eager_limit", "65536"}}, "sendrecv", "", 2, 2, kMiB).empty());
  CHECK(mpi_protocol({{"pml", "ob1"}}, "sendrecv", "", 2, 2, kMiB).empty());
  CHECK(mpi_protocol(tcp, "allreduce", "", 4, 4, kMiB).empty());
}
