#include "workloads/collective_pattern.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace gpuscale {

const std::vector<std::string>& coll_op_names() {
  static const std::vector<std::string> v{"allreduce", "allgather", "reduce_scatter", "broadcast",
                                          "reduce",    "alltoall",  "sendrecv",       "pairs"};
  return v;
}

CollOp parse_coll_op(const std::string& s) {
  const auto& names = coll_op_names();
  const auto it = std::find(names.begin(), names.end(), s);
  if (it == names.end()) throw std::invalid_argument("unknown op '" + s + "'");
  return static_cast<CollOp>(it - names.begin());
}

const char* coll_op_name(CollOp op) { return coll_op_names().at(static_cast<std::size_t>(op)).c_str(); }

bool coll_op_has_inplace(CollOp op) {
  return op != CollOp::alltoall && op != CollOp::sendrecv && op != CollOp::pairs;
}

CollShape coll_shape(CollOp op, std::size_t bytes, DType t, int n) {
  const std::size_t e = dtype_size(t);
  const std::size_t count = bytes / e;
  const std::size_t parts = static_cast<std::size_t>(n);
  CollShape s;
  switch (op) {
    case CollOp::allgather:
      s.op_count = count / parts;
      s.send_count = s.op_count;
      s.recv_count = s.op_count * parts;
      s.op_bytes = static_cast<double>(s.recv_count * e);
      break;
    case CollOp::reduce_scatter:
      s.op_count = count / parts;
      s.send_count = s.op_count * parts;
      s.recv_count = s.op_count;
      s.op_bytes = static_cast<double>(s.send_count * e);
      break;
    case CollOp::alltoall:
      s.op_count = count / parts;
      s.send_count = s.recv_count = s.op_count * parts;
      s.op_bytes = static_cast<double>(s.send_count * e);
      break;
    default:
      s.op_count = s.send_count = s.recv_count = count;
      s.op_bytes = static_cast<double>(count * e);
      break;
  }
  return s;
}

double bus_factor(CollOp op, int n) {
  const double d = n;
  switch (op) {
    case CollOp::allreduce: return 2.0 * (d - 1) / d;
    case CollOp::allgather:
    case CollOp::reduce_scatter:
    case CollOp::alltoall: return (d - 1) / d;
    default: return 1.0;
  }
}

int pair_partner(int rank, int n) { return (rank + n / 2) % n; }

int node_pair_rounds(int n) { return n < 2 ? 0 : n % 2 == 0 ? n - 1 : n; }

int node_pair_partner(int node, int round, int n) {
  if (n < 2 || node < 0 || node >= n || round < 0 || round >= node_pair_rounds(n)) return -1;
  // An odd n gets a dummy node n; its partner rests. Node m - 1 stays put,
  // the others turn around it: in round r, r meets m - 1 and r + k meets r - k.
  const int m = n % 2 == 0 ? n : n + 1;
  int partner;
  if (node == m - 1) {
    partner = round;
  } else if (node == round) {
    partner = m - 1;
  } else {
    partner = ((2 * round - node) % (m - 1) + (m - 1)) % (m - 1);
  }
  return partner < n ? partner : -1;
}

int pattern_modulus(DType t, int n) {
  double exact = 9007199254740992.0;  // 2^53
  if (t == DType::fp32 || t == DType::tf32) exact = 16777216.0;
  if (t == DType::fp16) exact = 2048.0;
  if (t == DType::bf16) exact = 256.0;
  // n * (modulus - 1) <= exact; 251 (a prime) keeps the pattern from repeating with powers of two.
  const double m = std::floor(exact / std::max(n, 1)) + 1;
  return static_cast<int>(std::clamp(m, 2.0, 251.0));
}

double pattern_value(int rank, std::size_t index, int modulus) {
  const std::uint64_t m = static_cast<std::uint64_t>(modulus);
  return static_cast<double>((static_cast<std::uint64_t>(rank) * 37 + index * 11 + 1) % m);
}

namespace {

double sum_over_ranks(int n, std::size_t index, int modulus) {
  double s = 0;
  for (int r = 0; r < n; ++r) s += pattern_value(r, index, modulus);
  return s;
}

// Runs f(first, values) over [0, count) in chunks, so that a 1 GiB buffer never needs 8 GiB of doubles.
template <class F>
void in_chunks(std::size_t count, F f) {
  constexpr std::size_t kChunk = 1 << 16;
  std::vector<double> v;
  for (std::size_t first = 0; first < count; first += kChunk) {
    v.resize(std::min(kChunk, count - first));
    f(first, v);
  }
}

}  // namespace

std::vector<unsigned char> coll_send_data(CollOp, DType t, int rank, int n, const CollShape& s) {
  const int m = pattern_modulus(t, n);
  const std::size_t e = dtype_size(t);
  std::vector<unsigned char> out(s.send_count * e);
  in_chunks(s.send_count, [&](std::size_t first, std::vector<double>& v) {
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = pattern_value(rank, first + i, m);
    encode(v.data(), v.size(), t, out.data() + first * e);
  });
  return out;
}

double coll_expected(CollOp op, int rank, int n, std::size_t i, const CollShape& s, int m) {
  const std::size_t c = s.op_count;
  switch (op) {
    case CollOp::allreduce: return sum_over_ranks(n, i, m);
    case CollOp::allgather: return pattern_value(static_cast<int>(i / c), i % c, m);
    case CollOp::reduce_scatter: return sum_over_ranks(n, static_cast<std::size_t>(rank) * c + i, m);
    case CollOp::broadcast: return pattern_value(kCollRoot, i, m);
    case CollOp::reduce: return rank == kCollRoot ? sum_over_ranks(n, i, m) : std::numeric_limits<double>::quiet_NaN();
    case CollOp::alltoall: return pattern_value(static_cast<int>(i / c), static_cast<std::size_t>(rank) * c + i % c, m);
    case CollOp::sendrecv: return pattern_value((rank - 1 + n) % n, i, m);
    case CollOp::pairs: return pattern_value(pair_partner(rank, n), i, m);
  }
  return std::numeric_limits<double>::quiet_NaN();
}

namespace {
// Elements of `recv` (s.recv_count in dtype t) that differ from expected(i); a NaN expectation is not checked.
template <class Expected>
std::int64_t count_wrong(DType t, const CollShape& s, const void* recv, Expected expected) {
  const auto* bytes = static_cast<const unsigned char*>(recv);
  const std::size_t e = dtype_size(t);
  std::int64_t wrong = 0;
  in_chunks(s.recv_count, [&](std::size_t first, std::vector<double>& v) {
    decode(bytes + first * e, v.size(), t, v.data());
    for (std::size_t i = 0; i < v.size(); ++i) {
      const double want = expected(first + i);
      if (!std::isnan(want) && v[i] != want) ++wrong;
    }
  });
  return wrong;
}
}  // namespace

std::int64_t coll_wrong_elements(CollOp op, DType t, int rank, int n, const CollShape& s, const void* recv) {
  const int m = pattern_modulus(t, n);
  return count_wrong(t, s, recv, [&](std::size_t i) { return coll_expected(op, rank, n, i, s, m); });
}

std::int64_t wrong_elements_from(DType t, int from, int n, const CollShape& s, const void* recv) {
  const int m = pattern_modulus(t, n);
  return count_wrong(t, s, recv, [&](std::size_t i) { return pattern_value(from, i, m); });
}

}  // namespace gpuscale
