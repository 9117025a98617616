#include "core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "core/hash.hpp"

namespace gpuscale {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Two doubles, and two 64-bit integers, as one SSE register (GCC and Clang
// vector extensions): the compiler does not vectorize the counting loop below by itself.
typedef double v2d __attribute__((vector_size(16)));
typedef std::int64_t v2l __attribute__((vector_size(16)));

v2d load2(const double* p) {
  v2d v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Where the values of s[0..n) lie against two pivots lo <= hi: how many
// below lo, equal to lo, strictly between (those kept in `mid`, at most `cap`:
// false when there are more), equal to hi (when above lo) and above hi, in
// one pass. Ties are counted, not kept: timings repeat values often. NaN is
// in none of them.
struct Split {
  std::size_t below = 0, at_lo = 0, at_hi = 0, above = 0;
  std::vector<double> mid;
};

bool split(const double* s, std::size_t n, double lo, double hi, std::size_t cap, Split& out) {
  const v2d l = {lo, lo}, h = {hi, hi};
  v2l c[4][2] = {};  // below, at lo, at hi, above; two lanes of two each
  std::size_t i = 0;
  const auto keep = [&](double x) {
    if (x > lo && x < hi) out.mid.push_back(x);
  };
  for (; i + 4 <= n; i += 4) {
    const v2d x[2] = {load2(s + i), load2(s + i + 2)};
    v2l outside[2];
    for (int j = 0; j < 2; ++j) {
      const v2l lt = x[j] < l, eq_lo = x[j] == l, eq_hi = x[j] == h, gt = x[j] > h;
      c[0][j] -= lt;  // a true comparison is -1
      c[1][j] -= eq_lo;
      c[2][j] -= eq_hi;
      c[3][j] -= gt;
      outside[j] = lt | eq_lo | eq_hi | gt;
    }
    // Most values lie outside (lo, hi): one well-predicted test per four.
    const v2l all = outside[0] & outside[1];
    if (!(all[0] & all[1])) {
      if (out.mid.size() + 4 > cap) return false;
      for (int k = 0; k < 4; ++k) keep(s[i + k]);
    }
  }
  std::size_t* counts[4] = {&out.below, &out.at_lo, &out.at_hi, &out.above};
  for (int q = 0; q < 4; ++q) *counts[q] = static_cast<std::size_t>(c[q][0][0] + c[q][0][1] + c[q][1][0] + c[q][1][1]);
  for (; i < n; ++i) {
    out.below += s[i] < lo;
    out.at_lo += s[i] == lo;
    out.at_hi += s[i] == hi;
    out.above += s[i] > hi;
    if (out.mid.size() + 1 > cap) return false;
    keep(s[i]);
  }
  if (lo == hi) out.at_hi = 0;  // counted once, as at_lo
  return true;
}

// The i-th smallest of v, for ascending i in turn: each is selected among the values after the one before (from,
// where the last call left it), which that selection put in place.
double nth_in_turn(std::vector<double>& v, std::size_t i, std::vector<double>::iterator& from) {
  const auto kth = v.begin() + static_cast<std::ptrdiff_t>(i);
  if (kth >= from) {  // else i repeats the one before, already in place
    std::nth_element(from, kth, v.end());
    from = kth + 1;
  }
  return *kth;
}

// The ks-th smallest of s into out (ks ascending, each below n; 0-based), by
// selecting in a copy: for small samples, and the fallback of the one below.
// False when s holds a NaN.
bool select_by_copy(const double* s, std::size_t n, const std::vector<std::size_t>& ks, std::vector<double>& out) {
  std::vector<double> v(s, s + n);
  bool nan = false;
  for (const double x : v) nan |= x != x;
  if (nan) return false;
  out.clear();
  auto from = v.begin();
  for (const std::size_t k : ks) out.push_back(nth_in_turn(v, k, from));
  return true;
}

// The same without copying or reordering s, in about two streaming passes
// (Floyd and Rivest's idea): two pivots from a sample of s bracket the ks-th
// smallest (ks close together: a median and its interval); only the values
// between them are kept and selected among. The sample is pseudo-random but
// fixed, so the result (exact either way) and the time do not depend on luck
// from run to run; when the bracket misses (rarely), the copy above.
bool select(const double* s, std::size_t n, const std::vector<std::size_t>& ks, std::vector<double>& out) {
  if (n < 4096) return select_by_copy(s, n, ks, out);
  // A sample of about n^(2/3), pivots about 2 sqrt(m) sample ranks beyond the ks' places in it.
  const auto m = static_cast<std::size_t>(std::cbrt(static_cast<double>(n)) * std::cbrt(static_cast<double>(n)));
  std::vector<double> sample(m);
  bool nan = false;
  for (std::size_t i = 0; i < m; ++i) {
    sample[i] = s[mix64(i + 1) % n];
    nan |= sample[i] != sample[i];
  }
  if (nan) return false;
  const auto gap = static_cast<std::size_t>(2.0 * std::sqrt(static_cast<double>(m))) + 1;
  const auto place = [&](std::size_t k) {
    return static_cast<std::size_t>(static_cast<double>(k) / static_cast<double>(n) * static_cast<double>(m));
  };
  const std::size_t first = place(ks.front()), last = place(ks.back());
  const std::size_t lo_i = first > gap ? first - gap : 0, hi_i = std::min(m - 1, last + gap);
  std::nth_element(sample.begin(), sample.begin() + static_cast<std::ptrdiff_t>(lo_i), sample.end());
  const double lo = lo_i == 0 ? -std::numeric_limits<double>::infinity() : sample[lo_i];
  std::nth_element(sample.begin() + static_cast<std::ptrdiff_t>(lo_i), sample.begin() + static_cast<std::ptrdiff_t>(hi_i),
                   sample.end());
  const double hi = hi_i == m - 1 ? std::numeric_limits<double>::infinity() : sample[hi_i];
  // One pass: how many lie below, at and above the pivots, and those between them.
  Split sp;
  const std::size_t cap = std::min(n, 4 * (hi_i - lo_i + 1) * (n / m + 1) + 4096);  // about 4 times the expected
  sp.mid.reserve(cap);
  if (!split(s, n, lo, hi, cap, sp)) return select_by_copy(s, n, ks, out);
  // In order: below | at lo | mid | at hi | above.
  const std::size_t e1 = sp.below + sp.at_lo, m_end = e1 + sp.mid.size(), e2 = m_end + sp.at_hi;
  if (e2 + sp.above != n) return false;  // NaNs: in none of them
  if (ks.front() < sp.below || ks.back() >= e2) return select_by_copy(s, n, ks, out);  // the sample misled: rare
  out.clear();
  auto from = sp.mid.begin();
  for (const std::size_t k : ks) out.push_back(k < e1 ? lo : k < m_end ? nth_in_turn(sp.mid, k - e1, from) : hi);
  return true;
}

// The lo-th smallest and the next one (the same at the end), into a and b; false when s holds a NaN.
bool select_pair(const double* s, std::size_t n, std::size_t lo, double& a, double& b) {
  std::vector<double> out;
  if (!select(s, n, {lo, std::min(lo + 1, n - 1)}, out)) return false;
  a = out[0];
  b = out[1];
  return true;
}

}  // namespace

double quantile(const double* s, std::size_t n, double q) {
  if (n == 0) throw std::invalid_argument("quantile of an empty sample");
  if (q < 0.0 || q > 1.0) throw std::invalid_argument("quantile outside [0, 1]");
  const double pos = q * static_cast<double>(n - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  // The lo-th smallest and the next one (the same at the end); NaN has no place in an order.
  double a = 0, b = 0;
  if (!select_pair(s, n, lo, a, b)) return kNaN;
  return a + (pos - static_cast<double>(lo)) * (b - a);
}

double quantile(const std::vector<double>& s, double q) { return quantile(s.data(), s.size(), q); }

double median(const std::vector<double>& s) { return quantile(s, 0.5); }

double run_scatter(const std::vector<double>& values, double centre) {
  std::vector<double> dev;
  double sum = 0;
  for (double v : values) {
    dev.push_back(std::fabs(std::log(v / centre)));
    sum += std::log(v);
  }
  const double mean = sum / static_cast<double>(values.size());
  double squares = 0;
  for (double v : values) squares += (std::log(v) - mean) * (std::log(v) - mean);
  const double sd = values.size() > 1 ? std::sqrt(squares / static_cast<double>(values.size() - 1)) : 0.0;
  return std::exp(std::max(1.4826 * median(dev), sd)) - 1;
}

double order_statistic(const std::vector<double>& s, std::size_t k) { return order_statistics(s, {k}).at(0); }

std::vector<double> order_statistics(const std::vector<double>& s, const std::vector<std::size_t>& ks) {
  if (ks.empty()) return {};
  if (!std::is_sorted(ks.begin(), ks.end())) throw std::invalid_argument("order statistics not in ascending order");
  if (ks.back() >= s.size()) throw std::invalid_argument("order statistic past the sample's end");
  std::vector<double> out;
  if (!select(s.data(), s.size(), ks, out)) out.assign(ks.size(), kNaN);
  return out;
}

double mean(const std::vector<double>& s) {
  double sum = 0;
  for (double x : s) sum += x;
  return s.empty() ? 0.0 : sum / static_cast<double>(s.size());
}

double minimum(const std::vector<double>& s) {
  if (s.empty()) throw std::invalid_argument("minimum of an empty sample");
  return *std::min_element(s.begin(), s.end());
}

double maximum(const std::vector<double>& s) {
  if (s.empty()) throw std::invalid_argument("maximum of an empty sample");
  return *std::max_element(s.begin(), s.end());
}

}  // namespace gpuscale
