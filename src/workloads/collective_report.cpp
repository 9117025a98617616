#include "workloads/collective_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "core/text.hpp"
#include "report/analysis.hpp"
#include "workloads/collective.hpp"
#include "workloads/node_pairs.hpp"

namespace gpuscale {

std::string nccl_float(double v, int width) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  for (const char* f : {"%.2f", "%.1f", "%.0f"}) {
    std::snprintf(buf, sizeof buf, f, v);
    if (std::strlen(buf) <= static_cast<std::size_t>(width)) return buf;
  }
  std::snprintf(buf, sizeof buf, width >= 7 ? "%.1e" : "%.0e", v);
  return buf;
}

namespace {

// One size of a block: its out-of-place and its in-place case, where the config ran them.
struct SizeRows {
  std::size_t bytes = 0;
  const ReportRow* out_of_place = nullptr;
  const ReportRow* in_place = nullptr;
};

// Rows of one op, dtype, scope, comm, mode and job (every key but bytes and inplace the same).
struct Block {
  std::vector<const ReportRow*> rows;
  std::vector<SizeRows> sizes;  // in the order the config ran them
};

// nccl-tests' preamble of a row: size (B), count (elements), type, redop, root.
std::vector<std::string> preamble(const ReportRow& r, const CollectiveParams& c) {
  const CollShape s = coll_shape(c.op, c.bytes, c.dtype, std::max(r.group_size, 1));
  const bool sums = c.op == CollOp::allreduce || c.op == CollOp::reduce_scatter || c.op == CollOp::reduce;
  const bool rooted = c.op == CollOp::broadcast || c.op == CollOp::reduce;
  return {format_number("%.0f", s.op_bytes), std::to_string(s.op_count), dtype_name(c.dtype), sums ? "sum" : "none",
          rooted ? "0" : "-1"};
}

// A row's results: time (us), algbw, busbw, #wrong and the slowest rank's time (us), as nccl-tests words numbers.
std::vector<std::string> results(const ReportRow& r) {
  if (r.status == CaseStatus::skipped || !r.op_time_s) return {"skipped", "-", "-", "-", "-"};
  return {nccl_float(*r.op_time_s * 1e6, 7), nccl_float(*r.algbw_gbps, 6), nccl_float(*r.busbw_gbps, 6),
          std::to_string(r.wrong_elements), r.op_time_max_s ? nccl_float(*r.op_time_max_s * 1e6, 7) : "-"};
}

using Cells = std::vector<std::vector<std::string>>;

// The rows of one half (out-of-place or in-place) of a block, under the two lines of the head.
Cells half_cells(const Block& b, bool in_place) {
  Cells cells{{"#", "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "max"},
              {"", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)"}};
  for (const auto& s : b.sizes) {
    const ReportRow* r = in_place ? s.in_place : s.out_of_place;
    if (!r) continue;
    std::vector<std::string> row{std::to_string(r->case_index + 1)};
    for (auto& c : preamble(*r, collective_params(r->params))) row.push_back(std::move(c));
    for (auto& c : results(*r)) row.push_back(std::move(c));
    cells.push_back(std::move(row));
  }
  return cells;
}

// Both halves right-aligned in the same columns, two spaces apart where that fits a terminal, else one; a half
// the config did not run is left out.
std::string halves(const Block& b) {
  const Cells parts[] = {half_cells(b, false), half_cells(b, true)};
  std::vector<std::size_t> width(parts[0].front().size(), 0);
  for (const auto& cells : parts) {
    for (const auto& row : cells) {
      for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    }
  }
  std::size_t total = 0;
  for (auto w : width) total += w + 2;
  const std::string sep = total - 2 <= kTerminalWidth ? "  " : " ";
  std::string out;
  for (std::size_t half = 0; half < 2; ++half) {
    if (parts[half].size() == 2) continue;  // no row but the head
    out += half ? "in-place\n" : "out-of-place\n";
    for (const auto& row : parts[half]) {
      std::string line;
      for (std::size_t i = 0; i < row.size(); ++i) {
        line += (i ? sep : "") + std::string(width[i] - row[i].size(), ' ') + row[i];
      }
      out += line + "\n";
    }
  }
  return out;
}

// nccl-tests' closing line: the mean busbw over every result of the block, out-of-place and in-place.
std::string average_busbw(const Block& b) {
  double sum = 0;
  int n = 0;
  for (const auto* r : b.rows) {
    if (r->status == CaseStatus::skipped || !r->busbw_gbps) continue;
    sum += *r->busbw_gbps;
    ++n;
  }
  if (n == 0) return "# Avg bus bandwidth    : - (no case ran)\n";
  return "# Avg bus bandwidth    : " + format_sig3(sum / n) + " GB/s (mean busbw of " + std::to_string(n) +
         " result(s))\n";
}

// The line above a block: what all its rows share.
std::string block_head(const Block& b) {
  const ReportRow& r = *b.rows.front();
  std::string shared;
  const Params rest = r.params.without({"bytes", "inplace"});
  for (const auto& [key, v] : rest.items()) shared += " " + key + "=" + to_string(v);
  const std::string groups = r.groups > 1 ? ", " + std::to_string(r.groups) + " groups of " +
                                                std::to_string(r.group_size) : "";
  return wrap(r.name + ": collective," + shared + ", " + mode_name(r.mode) + ", " + std::to_string(r.ranks) +
              " rank(s) on " + std::to_string(r.nodes) + " node(s), comm " + comm_name(r.comm) + groups);
}

// The experiment's rows in blocks, each block's sizes in the order they ran; false where a row lacks a key.
bool blocks_of(const std::vector<const ReportRow*>& rows, std::vector<Block>& blocks) {
  for (const auto* r : rows) {
    CollectiveParams c;
    try {
      c = collective_params(r->params);
    } catch (const std::exception&) {  // a file of an older collective, or edited
      return false;
    }
    if (c.sweep()) return false;
    const auto same = [&](const Block& b) {
      const ReportRow& f = *b.rows.front();
      return f.params.without({"bytes", "inplace"}) == r->params.without({"bytes", "inplace"}) &&
             f.mode == r->mode && f.ranks == r->ranks && f.nodes == r->nodes && f.comm == r->comm;
    };
    auto b = std::find_if(blocks.begin(), blocks.end(), same);
    if (b == blocks.end()) b = blocks.insert(blocks.end(), Block{});
    b->rows.push_back(r);
    auto s = std::find_if(b->sizes.begin(), b->sizes.end(), [&](const SizeRows& x) { return x.bytes == c.bytes; });
    if (s == b->sizes.end()) s = b->sizes.insert(b->sizes.end(), SizeRows{c.bytes});
    (c.inplace ? s->in_place : s->out_of_place) = r;
  }
  return true;
}

class CollectiveAnalysis : public RowAnalysis {
 public:
  std::vector<ReportOption> options() const override { return node_pair_analysis().options(); }
  bool times_one_operation(const CaseRecord& c) const override { return node_pair_analysis().times_one_operation(c); }
  void row(const RunRecord& run, const CaseRecord& c, const RowSettings& s, ReportRow& r) const override {
    node_pair_analysis().row(run, c, s, r);
  }
  std::string block(const std::vector<const ReportRow*>& rows) const override { return collective_tables(rows); }
};

}  // namespace

std::string collective_tables(const std::vector<const ReportRow*>& rows) {
  std::vector<Block> blocks;
  if (rows.empty() || !blocks_of(rows, blocks)) return "";
  std::string out;
  for (const auto& b : blocks) {
    out += (out.empty() ? "" : "\n") + block_head(b) + halves(b) + average_busbw(b);
  }
  return out + wrap("time: one operation, mean over ranks, median over samples; max: the slowest rank's, the "
                    "most over ranks in each sample, median over samples; #wrong: wrong elements, the most on one "
                    "rank; size, count, redop and root as nccl-tests prints them; busbw = algbw x nccl-tests' "
                    "factor");
}

const RowAnalysis& collective_analysis() {
  static const CollectiveAnalysis a;
  return a;
}

}  // namespace gpuscale
