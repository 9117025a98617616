// Where a case's sample time goes, measured (report/breakdown.hpp): per sample and turn the median rank's
// compute, exposed transfer and overhead, and the turn's wait for its slowest rank; the median over samples of each.
// Definitions: docs/metrics.md, "Where the time goes".
#include "report/breakdown.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/stats.hpp"
#include "io/phase_names.hpp"
#include "report/report.hpp"

namespace gpuscale {

namespace {

struct Span {
  double from = 0, to = 0;
};
using Spans = std::vector<Span>;

// `s` sorted and merged into disjoint spans; empty ones dropped.
void merge(Spans& s) {
  std::sort(s.begin(), s.end(), [](const Span& a, const Span& b) { return a.from < b.from; });
  std::size_t n = 0;
  for (const Span& x : s) {
    if (!(x.to > x.from)) continue;
    if (n > 0 && x.from <= s[n - 1].to) {
      s[n - 1].to = std::max(s[n - 1].to, x.to);
    } else {
      s[n++] = x;
    }
  }
  s.resize(n);
}

double length(const Spans& s) {
  double sum = 0;
  for (const Span& x : s) sum += x.to - x.from;
  return sum;
}

// Time covered by `a` and not by `b`, both merged.
double outside(const Spans& a, const Spans& b) {
  double both = 0;
  std::size_t j = 0;
  for (const Span& x : a) {
    while (j < b.size() && b[j].to <= x.from) ++j;
    for (std::size_t k = j; k < b.size() && b[k].from < x.to; ++k) {
      both += std::min(x.to, b[k].to) - std::max(x.from, b[k].from);
    }
  }
  return length(a) - both;
}

// The compute and transfer intervals of the phases table, grouped by rank and sample (at = rank * reps + sample).
class PhaseIndex {
 public:
  // None where the case marks no compute or transfer phase.
  static std::optional<PhaseIndex> of(const CaseRecord& c) {
    PhaseIndex p;
    p.col_ = phase_columns(c);
    if (p.col_.empty()) return std::nullopt;
    const auto& names = p.col_[2]->levels;
    const auto index = [&](const char* name) {
      const auto it = std::find(names.begin(), names.end(), name);
      return it == names.end() ? std::int64_t{-1} : static_cast<std::int64_t>(it - names.begin());
    };
    p.compute_ = index(kComputePhase);
    p.transfer_ = index(kTransferPhase);
    if (p.compute_ < 0 && p.transfer_ < 0) return std::nullopt;
    p.group(c, p.col_[0]->ints.size());
    return p;
  }

  // The rank's compute and transfer spans in its sample `at`, merged.
  void spans(std::size_t at, Spans& compute, Spans& transfer) const {
    compute.clear();
    transfer.clear();
    for (std::size_t k = first_[at]; k < first_[at + 1]; ++k) {
      const std::size_t i = order_[k];
      const Span s{col_[3]->reals[i], col_[4]->reals[i]};
      (col_[2]->ints[i] == compute_ ? compute : transfer).push_back(s);
    }
    merge(compute);
    merge(transfer);
  }

 private:
  // A counting sort of the compute and transfer rows by rank and sample.
  void group(const CaseRecord& c, std::size_t rows) {
    const std::size_t samples = static_cast<std::size_t>(c.ranks) * static_cast<std::size_t>(c.reps);
    const auto at_of = [&](std::size_t i) {
      const std::int64_t phase = col_[2]->ints[i], rank = col_[0]->ints[i], sample = col_[1]->ints[i];
      const bool counted = (phase == compute_ || phase == transfer_) && rank >= 0 && rank < c.ranks &&
                           sample >= 0 && sample < c.reps;
      return counted ? static_cast<std::size_t>(rank * c.reps + sample) : samples;  // samples: left out
    };
    first_.assign(samples + 2, 0);
    for (std::size_t i = 0; i < rows; ++i) ++first_[at_of(i) + 1];
    for (std::size_t k = 1; k < first_.size(); ++k) first_[k] += first_[k - 1];
    order_.resize(first_[samples]);
    std::vector<std::size_t> next(first_.begin(), first_.end() - 2);
    for (std::size_t i = 0; i < rows; ++i) {
      const std::size_t at = at_of(i);
      if (at < samples) order_[next[at]++] = i;
    }
  }

  std::vector<const TableColumn*> col_;  // rank, sample, phase, start, end
  std::int64_t compute_ = -1, transfer_ = -1;
  std::vector<std::size_t> first_;  // [at]: where at's rows begin in order_; [at + 1]: where they end
  std::vector<std::size_t> order_;
};

// One rank's sample: its span (wall_end - wall_start), compute, exposed transfer and wire time.
struct RankParts {
  double span = 0, compute = 0, exposed = 0, wire = 0;
};

// A rank of a turn: where its samples begin in the [rank][rep] arrays, and whether it took part.
struct Member {
  std::size_t base = 0;
  int rank = 0;
  bool in = true;
};

// Each part of each sample of a case, summed over its turns; the median of each is the breakdown.
class SampleParts {
 public:
  static constexpr int kParts = 5;

  SampleParts(const CaseRecord& c, std::optional<PhaseIndex> phases)
      : c_(c), phases_(std::move(phases)), units_(units_of(c)), start_(c.wall_start_s.data()),
        end_(c.wall_end_s.data()), busy_(c.device_time_s.data()) {}

  Breakdown medians() {
    // Per sample: compute, exposed, overhead, wait, wire; a part's samples are kept from its first that is not 0
    // on (files can be large, and some parts are 0 throughout: the wait of serial work, a gemm's transfer).
    std::vector<double> parts[kParts];
    bool kept[kParts] = {false, false, false, false, false};
    const int stored = phases_ ? kParts : kParts - 1;  // without phases the wire time is the exposed transfer
    const auto reps = static_cast<std::size_t>(c_.reps);
    for (std::size_t i = 0; i < reps; ++i) {
      double sum[kParts] = {0, 0, 0, 0, 0};
      for (const auto& unit : units_) add_unit(unit, i, sum);
      for (int k = 0; k < stored; ++k) {
        if (sum[k] != 0 && !kept[k]) {
          parts[k].reserve(reps);
          parts[k].assign(i, 0.0);
          kept[k] = true;
        }
        if (kept[k]) parts[k].push_back(sum[k]);
      }
    }
    const auto part = [&](int k) { return kept[k] ? median(parts[k]) : 0.0; };
    Breakdown b;
    b.compute_s = part(0);
    b.exposed_s = part(1);
    b.overhead_s = part(2);
    b.wait_s = part(3);
    b.wire_s = phases_ ? part(4) : b.exposed_s;
    return b;
  }

 private:
  // The ranks that run together: in serial mode each turn's, in turn order; in parallel mode all of them.
  static std::vector<std::vector<Member>> units_of(const CaseRecord& c) {
    const std::vector<std::int64_t> turn = turns_of(c);
    const bool serial = c.mode == Mode::serial;
    const std::vector<bool> in = taking_part(c);
    std::vector<std::vector<Member>> units(
        serial ? static_cast<std::size_t>(*std::max_element(turn.begin(), turn.end()) + 1) : 1);
    for (int r = 0; r < c.ranks; ++r) {
      const auto u = serial ? static_cast<std::size_t>(turn[static_cast<std::size_t>(r)]) : 0;
      units[u].push_back({static_cast<std::size_t>(r) * static_cast<std::size_t>(c.reps), r,
                          in[static_cast<std::size_t>(r)]});
    }
    return units;
  }

  // Sample i of the ranks that ran together: the median rank's parts, and the time it waited for the unit's end.
  void add_unit(const std::vector<Member>& unit, std::size_t i, double* sum) {
    double lo = start_[unit[0].base + i], hi = end_[unit[0].base + i];
    spans_.clear();
    for (const Member& m : unit) {
      const std::size_t a = m.base + i;
      lo = std::min(lo, start_[a]);
      hi = std::max(hi, end_[a]);
      if (m.in) spans_.emplace_back(end_[a] - start_[a], a);
    }
    if (spans_.empty()) {  // no rank of the unit took part: the unit's time is only waited through
      sum[3] += hi - lo;
      return;
    }
    const RankParts p = rank_parts(median_rank());
    sum[0] += p.compute;
    sum[1] += p.exposed;
    sum[2] += std::max(0.0, p.span - p.compute - p.exposed);
    sum[3] += std::max(0.0, (hi - lo) - p.span);
    sum[4] += p.wire;
  }

  // Where the median rank's sample is, of spans_; of an even count the faster of the middle two, so that with 2
  // ranks the wait is the faster one's for the slower. Ties go to the lower rank.
  std::size_t median_rank() {
    if (spans_.size() <= 2) return std::min(spans_.front(), spans_.back()).second;
    const auto mid = spans_.begin() + static_cast<std::ptrdiff_t>((spans_.size() - 1) / 2);
    std::nth_element(spans_.begin(), mid, spans_.end());
    return mid->second;
  }

  // From the phases where the case has them; else its busy time (device_time) is all compute for device-local
  // work, all exposed transfer for transfers.
  RankParts rank_parts(std::size_t a) {
    RankParts p;
    p.span = end_[a] - start_[a];
    if (phases_) {
      phases_->spans(a, compute_, transfer_);
      p.compute = length(compute_);
      p.wire = length(transfer_);
      p.exposed = outside(transfer_, compute_);
    } else if (!c_.scope) {
      p.compute = busy_[a];
    } else {
      p.exposed = p.wire = busy_[a];
    }
    return p;
  }

  const CaseRecord& c_;
  std::optional<PhaseIndex> phases_;
  std::vector<std::vector<Member>> units_;
  const double *start_, *end_, *busy_;
  std::vector<std::pair<double, std::size_t>> spans_;  // scratch: (span, where) of a unit's ranks that took part
  Spans compute_, transfer_;                           // scratch: one rank-sample's intervals
};

}  // namespace

std::optional<Breakdown> measured_breakdown(const CaseRecord& c, double total_s) {
  const std::size_t n = static_cast<std::size_t>(c.ranks) * static_cast<std::size_t>(c.reps);
  if (c.status == CaseStatus::skipped || c.reps <= 0 || c.ranks <= 0 || c.wall_start_s.size() != n ||
      c.wall_end_s.size() != n || c.device_time_s.size() != n) {
    return std::nullopt;
  }
  Breakdown b = SampleParts(c, PhaseIndex::of(c)).medians();
  b.total_s = total_s;
  return b;
}

std::optional<Breakdown> measured_breakdown(const CaseRecord& c) {
  const std::size_t n = static_cast<std::size_t>(c.ranks) * static_cast<std::size_t>(c.reps);
  if (c.status == CaseStatus::skipped || c.reps <= 0 || c.ranks <= 0 || c.wall_start_s.size() != n ||
      c.wall_end_s.size() != n) {
    return std::nullopt;
  }
  return measured_breakdown(c, median(sample_times(c)));
}

std::string breakdown_json(const Breakdown& b) {
  const nlohmann::json o{{"total_s", b.total_s},       {"compute_s", b.compute_s}, {"exposed_transfer_s", b.exposed_s},
                         {"overhead_s", b.overhead_s}, {"wait_s", b.wait_s},       {"wire_s", b.wire_s},
                         {"sum_s", b.sum()}};
  return o.dump();
}

}  // namespace gpuscale
