// The known data of the collective workload: every element a small integer
// that depends on the rank and the index, so that every operation's exact
// result is computable (and exact in every dtype, sums included) and each
// result element can be checked. Pure functions, tested on their own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "device/dtype.hpp"

namespace gpuscale {

enum class CollOp { allreduce, allgather, reduce_scatter, broadcast, reduce, alltoall, sendrecv, pairs };
CollOp parse_coll_op(const std::string& s);  // throws std::invalid_argument
const char* coll_op_name(CollOp op);
const std::vector<std::string>& coll_op_names();
bool coll_op_has_inplace(CollOp op);  // allreduce, allgather, reduce_scatter, broadcast, reduce

// Element counts of one operation in a group of n ranks, from the requested
// bytes, as nccl-tests sizes them: allgather, reduce_scatter and alltoall
// split the total into n equal parts (rounded down).
struct CollShape {
  std::size_t send_count = 0;  // elements in this rank's send buffer
  std::size_t recv_count = 0;  // elements in this rank's receive buffer
  std::size_t op_count = 0;    // the count passed to the operation (per part where there are parts)
  double op_bytes = 0;         // nccl-tests' "size": the total the operation moves, in bytes
};
CollShape coll_shape(CollOp op, std::size_t bytes, DType t, int n);

// nccl-tests' bus bandwidth factor: allreduce 2(n-1)/n; allgather,
// reduce_scatter, alltoall (n-1)/n; broadcast, reduce, sendrecv, pairs 1.
double bus_factor(CollOp op, int n);

// The partner of a rank in `pairs`: the rank half a group away (n even).
int pair_partner(int rank, int n);

// The node-pair sweep (scope node-pairs), the circle method of round-robin
// tournaments: over node_pair_rounds(n) rounds every two of n nodes meet
// exactly once, and the pairs of a round are disjoint. n even: n - 1 rounds
// of n/2 pairs; n odd: n rounds, one node resting in each. Nodes and rounds
// count from 0; the partner is -1 for the resting node (and for n < 2).
int node_pair_rounds(int n);
int node_pair_partner(int node, int round, int n);

// Values are integers in [0, modulus): the modulus keeps every sum of n of
// them exact in the dtype (fp16 up to 2048, bf16 up to 256).
int pattern_modulus(DType t, int n);
double pattern_value(int rank, std::size_t index, int modulus);

// The root of broadcast and reduce: the group's rank 0.
constexpr int kCollRoot = 0;

// The send buffer of `rank`, encoded in dtype t (send_count elements).
std::vector<unsigned char> coll_send_data(CollOp op, DType t, int rank, int n, const CollShape& s);
// The value rank `rank`'s receive buffer must hold at element i after the
// operation (root kCollRoot); NaN where the operation defines no value (reduce
// at a rank other than the root).
double coll_expected(CollOp op, int rank, int n, std::size_t i, const CollShape& s, int modulus);
// Elements of `recv` (recv_count elements in dtype t) that differ from the expected values.
std::int64_t coll_wrong_elements(CollOp op, DType t, int rank, int n, const CollShape& s, const void* recv);
// Elements of `recv` (recv_count elements) that differ from what rank `from` of n sends.
std::int64_t wrong_elements_from(DType t, int from, int n, const CollShape& s, const void* recv);

}  // namespace gpuscale
