// Transfers without MPI: the sizes and bus factors nccl-tests uses, the known
// pattern that makes every result checkable, scopes, the transport choice,
// check-time refusals and the metrics of turns.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "comm/comm_choice.hpp"
#include "comm/groups.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "core/metrics.hpp"
#include "core/plan.hpp"
#include "workloads/collective.hpp"
#include "workloads/collective_pattern.hpp"
#include "workloads/workload.hpp"

using namespace gpuscale;

namespace {

// What each rank's receive buffer holds after `op` when every rank sent its
// pattern: a host model of the operation written from its definition, not
// from coll_expected.
std::vector<std::vector<double>> model_result(CollOp op, DType t, int n, const CollShape& s) {
  const std::size_t e = dtype_size(t);
  std::vector<std::vector<double>> send(n, std::vector<double>(s.send_count));
  for (int r = 0; r < n; ++r) {
    const auto bytes = coll_send_data(op, t, r, n, s);
    decode(bytes.data(), s.send_count, t, send[r].data());
    REQUIRE(bytes.size() == s.send_count * e);
  }
  const std::size_t c = s.op_count;
  std::vector<std::vector<double>> recv(n, std::vector<double>(s.recv_count, std::nan("")));
  for (int q = 0; q < n; ++q) {
    for (std::size_t i = 0; i < s.recv_count; ++i) {
      double v = 0;
      switch (op) {
        case CollOp::allreduce:
          for (int r = 0; r < n; ++r) v += send[r][i];
          break;
        case CollOp::reduce:
          if (q != 0) continue;
          for (int r = 0; r < n; ++r) v += send[r][i];
          break;
        case CollOp::allgather: v = send[i / c][i % c]; break;
        case CollOp::reduce_scatter:
          for (int r = 0; r < n; ++r) v += send[r][q * c + i];
          break;
        case CollOp::broadcast: v = send[0][i]; break;
        case CollOp::alltoall: v = send[i / c][q * c + i % c]; break;
        case CollOp::sendrecv: v = send[(q + n - 1) % n][i]; break;
        case CollOp::pairs: v = send[(q + n / 2) % n][i]; break;
      }
      recv[q][i] = v;
    }
  }
  return recv;
}

Params coll_params(const std::string& op, const std::string& dtype, bool inplace) {
  Params p;
  p.set("op", op);
  p.set("dtype", dtype);
  p.set("bytes", std::int64_t{4096});
  p.set("inplace", inplace);
  p.set("iters", std::int64_t{1});
  p.set("scope", std::string("world"));
  return p;
}

}  // namespace

TEST_CASE("sizes follow nccl-tests: parts of the total for allgather, reduce_scatter, alltoall", "[collective]") {
  const CollShape ar = coll_shape(CollOp::allreduce, 1000, DType::fp32, 4);
  CHECK(ar.op_count == 250);
  CHECK(ar.send_count == 250);
  CHECK(ar.recv_count == 250);
  CHECK(ar.op_bytes == 1000);
  const CollShape ag = coll_shape(CollOp::allgather, 1000, DType::fp32, 3);  // 250 elements: 83 per rank
  CHECK(ag.op_count == 83);
  CHECK(ag.send_count == 83);
  CHECK(ag.recv_count == 249);
  CHECK(ag.op_bytes == 996);
  const CollShape rs = coll_shape(CollOp::reduce_scatter, 1000, DType::fp64, 4);  // 125 elements: 31 per rank
  CHECK(rs.op_count == 31);
  CHECK(rs.send_count == 124);
  CHECK(rs.recv_count == 31);
  CHECK(rs.op_bytes == 992);
  const CollShape a2a = coll_shape(CollOp::alltoall, 1024, DType::fp16, 4);
  CHECK(a2a.op_count == 128);
  CHECK(a2a.send_count == 512);
  CHECK(a2a.recv_count == 512);
  CHECK(a2a.op_bytes == 1024);
  CHECK(coll_shape(CollOp::allgather, 8, DType::fp64, 2).op_count == 0);
}

TEST_CASE("bus bandwidth factors are nccl-tests' ones", "[collective]") {
  CHECK(bus_factor(CollOp::allreduce, 4) == Approx(1.5));
  CHECK(bus_factor(CollOp::allreduce, 2) == Approx(1.0));
  CHECK(bus_factor(CollOp::allreduce, 1) == 0.0);
  for (auto op : {CollOp::allgather, CollOp::reduce_scatter, CollOp::alltoall}) {
    CHECK(bus_factor(op, 4) == Approx(0.75));
    CHECK(bus_factor(op, 8) == Approx(0.875));
  }
  for (auto op : {CollOp::broadcast, CollOp::reduce, CollOp::sendrecv, CollOp::pairs}) CHECK(bus_factor(op, 8) == 1.0);
}

TEST_CASE("every op's result is exact and checkable in every dtype, and a wrong element is counted", "[collective]") {
  for (const auto& name : coll_op_names()) {
    const CollOp op = parse_coll_op(name);
    for (DType t : {DType::fp32, DType::fp64, DType::fp16, DType::bf16}) {
      for (int n : {1, 2, 3, 4, 8}) {
        if (op == CollOp::pairs && n % 2) continue;
        const CollShape s = coll_shape(op, 4096, t, n);
        const auto want = model_result(op, t, n, s);
        for (int q = 0; q < n; ++q) {
          std::vector<unsigned char> got(s.recv_count * dtype_size(t));
          // Undefined elements (reduce off the root) stay as the model left them: NaN.
          encode(want[q].data(), s.recv_count, t, got.data());
          INFO(name << " " << dtype_name(t) << " n=" << n << " rank " << q);
          CHECK(coll_wrong_elements(op, t, q, n, s, got.data()) == 0);
          if (op == CollOp::reduce && q != 0) continue;
          std::vector<double> bad = want[q];
          bad[s.recv_count / 2] += 1;
          encode(bad.data(), s.recv_count, t, got.data());
          CHECK(coll_wrong_elements(op, t, q, n, s, got.data()) == 1);
        }
      }
    }
  }
}

TEST_CASE("the pattern keeps sums exact: values shrink as groups grow", "[collective]") {
  CHECK(pattern_modulus(DType::fp32, 2) == 251);
  CHECK(pattern_modulus(DType::fp16, 16) == 129);
  CHECK((pattern_modulus(DType::fp16, 16) - 1) * 16 <= 2048);
  CHECK((pattern_modulus(DType::bf16, 8) - 1) * 8 <= 256);
  CHECK(pattern_value(1, 0, 251) != pattern_value(0, 0, 251));  // rank-dependent
  CHECK(pattern_value(0, 1, 251) != pattern_value(0, 0, 251));  // index-dependent
  CHECK(pair_partner(0, 4) == 2);
  CHECK(pair_partner(3, 4) == 1);
}

TEST_CASE("scopes group ranks by node or by local rank", "[collective][scope]") {
  CHECK(scope_group_index(Scope::world, 3, 1) == 0);
  CHECK(scope_group_index(Scope::intra_node, 3, 1) == 3);
  CHECK(scope_group_index(Scope::inter_node, 3, 1) == 1);
  CHECK(parse_scope("inter-node") == Scope::inter_node);
  CHECK(std::string(scope_name(Scope::intra_node)) == "intra-node");
  CHECK_THROWS(parse_scope("node"));
}

TEST_CASE("comm auto picks NCCL on CUDA and MPI otherwise, and says why", "[collective][comm]") {
  CHECK(choose_comm("auto", Backend::cpu, true).comm == CommKind::mpi);
  CHECK(choose_comm("auto", Backend::cpu, true).reason == "comm auto: MPI on the cpu backend");
  CHECK(choose_comm("auto", Backend::cuda, true).comm == CommKind::nccl);
  CHECK(choose_comm("auto", Backend::cuda, false).comm == CommKind::mpi);
  CHECK(choose_comm("mpi", Backend::cuda, true).comm == CommKind::mpi);
  CHECK_THROWS_WITH(choose_comm("nccl", Backend::cpu, true),
                    "comm \"nccl\" needs the CUDA backend, and this run uses the cpu backend (use comm \"mpi\" or "
                    "\"auto\")");
  CHECK_THROWS_WITH(choose_comm("nccl", Backend::cuda, false),
                    "comm \"nccl\" cannot run: this gpuscale was built without NCCL");
}

TEST_CASE("ranks sharing a GPU: auto falls back to MPI, nccl is an input error naming them", "[collective][comm]") {
  const std::string shared = "ranks 0 and 1 on node1 share GPU GPU-1234";
  const CommChoice nccl{CommKind::nccl, "comm auto: NCCL on the CUDA backend"};
  const CommChoice a = comm_for_shared_devices(nccl, "auto", shared);
  CHECK(a.comm == CommKind::mpi);
  CHECK(a.reason == "comm auto: " + shared + ", which NCCL refuses; MPI through host memory instead");
  CHECK(comm_for_shared_devices(nccl, "auto", "").comm == CommKind::nccl);
  CHECK_THROWS_WITH(comm_for_shared_devices({CommKind::nccl, "comm \"nccl\" requested"}, "nccl", shared),
                    "comm \"nccl\" cannot run: " + shared +
                        ", and NCCL refuses two ranks on one GPU; start one rank per GPU, or use comm \"mpi\"");
}

TEST_CASE("check refuses in-place where an op has none and 16-bit sums over MPI", "[collective][errors]") {
  const RunTarget mpi{Backend::cpu, CommKind::mpi}, nccl{Backend::cuda, CommKind::nccl};
  CHECK(collective_type().unsupported(coll_params("sendrecv", "fp32", true), mpi) ==
        "op 'sendrecv' has no in-place form (inplace applies to allreduce, allgather, reduce_scatter, broadcast, "
        "reduce)");
  CHECK(collective_type().unsupported(coll_params("allreduce", "fp16", false), mpi) ==
        "op 'allreduce' with dtype fp16 is not available over MPI (MPI has no 16-bit float sum; it moves fp16 and "
        "bf16 but does not add them); use dtype fp32 or fp64, or comm \"nccl\" on a GPU");
  CHECK(collective_type().unsupported(coll_params("allgather", "bf16", true), mpi).empty());
  CHECK(collective_type().unsupported(coll_params("allreduce", "bf16", true), nccl).empty());
}

TEST_CASE("a world-scope transfer runs once, pairs and other scopes keep both modes", "[collective][plan]") {
  const std::string toml = R"([[experiment]]
name = "t"
workload = "collective"
op = ["allreduce", "pairs"]
scope = ["world", "intra-node"]
[[experiment]]
name = "g"
workload = "gemm"
size = 8
)";
  auto plan = expand(parse_config(toml, "t.toml", {}, workload_schemas()));
  REQUIRE(plan.size() == 10);
  const auto notes = drop_single_turn_serials(plan);
  REQUIRE(plan.size() == 9);
  CHECK(plan[0].mode == Mode::parallel);
  CHECK(plan[0].params.get_string("scope") == "world");
  CHECK(plan[1].params.get_string("scope") == "intra-node");
  CHECK(plan[1].mode == Mode::serial);
  for (std::size_t i = 0; i < plan.size(); ++i) CHECK(plan[i].index == i);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] == "experiment 't': one group takes every turn, so serial and parallel are the same; each such case "
                    "runs once, as parallel");
}

TEST_CASE("serial time is the sum over turns of each turn's makespan, op time is nccl-tests' mean", "[metrics]") {
  // 4 ranks, 2 reps; ranks 0,1 are turn 0 and ranks 2,3 turn 1.
  const std::vector<double> start{0, 10, 0.5, 10.5, 2, 12, 2, 12.2};
  const std::vector<double> end{1, 11, 1.0, 11.5, 3, 13, 3.5, 13};
  const auto t = serial_turn_totals(start, end, {0, 0, 1, 1}, 4, 2);
  CHECK(t[0] == Approx(1.0 + 1.5));
  CHECK(t[1] == Approx(1.5 + 1.0));
  // Every rank its own turn: the sum of durations, as before turns existed.
  const auto each = serial_turn_totals(start, end, {0, 1, 2, 3}, 4, 2);
  CHECK(each[0] == Approx(1 + 0.5 + 1 + 1.5));
  const auto op = mean_op_times({4, 8, 2, 4, 6, 12, 4, 8}, 4, 2, 2);
  CHECK(op[0] == Approx((4 + 2 + 6 + 4) / 4.0 / 2));
  CHECK(op[1] == Approx((8 + 4 + 12 + 8) / 4.0 / 2));
  CHECK_THROWS(serial_turn_totals(start, end, {0, 1}, 4, 2));
}
