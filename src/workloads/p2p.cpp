#include "workloads/p2p.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/text.hpp"
#include "report/analysis.hpp"
#include "workloads/collective_pattern.hpp"
#include "workloads/typed_workload.hpp"

namespace gpuscale {

namespace {

constexpr DType kType = DType::fp32;  // messages are whole fp32 elements, checked value by value
constexpr std::size_t kAckBytes = 4;
constexpr std::int64_t kOsuWindow = 64;    // osu_bw's and osu_bibw's window_size
constexpr double kMaxWindow = 1048576.0;  // 2^20 messages enqueued before the window's wait

P2pPattern parse_pattern(const std::string& s) {
  if (s == "latency") return P2pPattern::latency;
  if (s == "bw") return P2pPattern::bw;
  if (s == "bibw") return P2pPattern::bibw;
  throw std::invalid_argument("unknown pattern '" + s + "'");
}

const char* pattern_name(P2pPattern p) {
  switch (p) {
    case P2pPattern::latency: return "latency";
    case P2pPattern::bw: return "bw";
    case P2pPattern::bibw: return "bibw";
  }
  return "bibw";
}

// Bytes of one message: `bytes` rounded down to whole elements.
std::size_t message_bytes(std::size_t bytes) { return bytes / dtype_size(kType) * dtype_size(kType); }

// Why a case cannot run on this job, once for the run and the estimate: its scope, and pairs need an even group.
std::string p2p_skip_reason(const P2pParams& p, int nodes, int group, int size) {
  if (std::string why = scope_skip_reason(p.scope, nodes); !why.empty()) return why;
  return odd_group_reason("p2p", p.scope, group, size);
}

// What one operation carries: a round trip the message twice, a window `window` messages (bibw: each way).
double op_bytes_of(const P2pParams& p) {
  const double m = static_cast<double>(message_bytes(p.bytes));
  const double w = static_cast<double>(p.window);
  return p.pattern == P2pPattern::latency ? 2 * m : p.pattern == P2pPattern::bw ? w * m : 2 * w * m;
}

WorkloadSchema p2p_schema() {
  WorkloadSchema s;
  s.name = "p2p";
  s.rate = RateKind::transfer;
  s.description = "point-to-point between rank pairs (OSU's latency, bw, bibw): each rank with the rank half its "
                  "group away, in a scope: world | intra-node | inter-node";
  s.params = {
      {"pattern", ParamType::String, "latency (ping-pong) | bw (a window one way, then an acknowledgement) | bibw "
       "(a window each way)", Value{std::string("latency")}, 0, {"latency", "bw", "bibw"}},
      {"bytes", ParamType::Int, "bytes of one message (whole 4-byte elements); sweep with {from, to, factor}",
       Value{std::int64_t{8}}, 4, {}, kMaxBufferBytes},
      {"iters", ParamType::Int, "round trips (latency) or windows (bw, bibw) per timed sample",
       Value{std::int64_t{100}}, 1, {}, kMaxCount},
      {"window", ParamType::Int, "bw, bibw: messages in flight per iteration, then one wait for them all (osu_bw's "
       "window); latency sends one at a time", Value{kOsuWindow}, 1, {}, kMaxWindow},
      {"scope", ParamType::String, "world (all ranks) | intra-node (pairs within a node) | inter-node (pairs across "
       "nodes: a group per local rank)", Value{std::string("world")}, 0, scope_names()},
  };
  return s;
}

// A column of the block in OSU's terms: its head, a cell per row, and whether it reads left-aligned.
struct OsuColumn {
  std::string head;
  std::vector<std::string> cells;
  bool left = false;
};

// The parameters of the rows but `leave_out`: " k=v" of those with one value in every row, and a column of each of
// the others.
std::pair<std::string, std::vector<OsuColumn>> split_keys(const std::vector<const ReportRow*>& rows,
                                                          const std::vector<std::string>& leave_out) {
  std::vector<Params> ps;
  std::vector<std::string> keys;
  for (const auto* r : rows) {
    ps.push_back(r->params.without(leave_out));
    for (const auto& kv : ps.back().items()) {
      if (std::find(keys.begin(), keys.end(), kv.first) == keys.end()) keys.push_back(kv.first);
    }
  }
  std::pair<std::string, std::vector<OsuColumn>> out;
  for (const auto& k : keys) {
    OsuColumn c{k, {}, true};
    for (const auto& p : ps) c.cells.push_back(p.has(k) ? to_string(p.at(k)) : "-");
    if (std::all_of(c.cells.begin(), c.cells.end(), [&](const std::string& x) { return x == c.cells[0]; })) {
      out.first += " " + k + "=" + c.cells[0];
    } else {
      out.second.push_back(std::move(c));
    }
  }
  return out;
}

// A figure as OSU prints its numbers, two decimals; "-" where the row has none.
std::string osu_number(const ReportRow& r, const char* key) {
  const std::optional<double> v = r.figure_value(key);
  return v ? format_number("%.2f", *v) : "-";
}

// A column whose cells `cell` words, where `keep` holds for some row.
template <class Keep, class Cell>
void add_column(std::vector<OsuColumn>& cols, const std::vector<const ReportRow*>& rows, const std::string& head,
                Keep keep, Cell cell, bool left = false) {
  if (std::none_of(rows.begin(), rows.end(), [&](const ReportRow* r) { return keep(*r); })) return;
  cols.push_back({head, {}, left});
  for (const auto* r : rows) cols.back().cells.push_back(cell(*r));
}

std::string render_osu_columns(const std::vector<OsuColumn>& cols, std::size_t rows) {
  std::vector<std::vector<std::string>> cells(rows + 1);
  for (const auto& c : cols) {
    cells[0].push_back(c.head);
    for (std::size_t i = 0; i < rows; ++i) cells[i + 1].push_back(c.cells[i]);
  }
  return align_columns(cells, [&cols](std::size_t i) { return cols[i].left; });
}

// The numbers' columns: size, latency (us), bandwidth (MB/s), then speedup and slowest (`optional`, dropped last
// first where the table is too wide), and the status.
void osu_number_columns(const std::vector<const ReportRow*>& rows, std::vector<OsuColumn>& cols,
                        std::vector<OsuColumn>& optional) {
  const auto any = [](const ReportRow&) { return true; };
  add_column(cols, rows, "size (B)", any, [](const ReportRow& r) {  // of a message as sent: whole elements
    if (!r.params.has("bytes")) return std::string("-");
    return std::to_string(message_bytes(static_cast<std::size_t>(r.params.get_int("bytes"))));
  });
  add_column(cols, rows, "latency (us)", [](const ReportRow& r) { return r.figure("latency_us") != nullptr; },
             [](const ReportRow& r) { return osu_number(r, "latency_us"); });
  add_column(cols, rows, "bandwidth (MB/s)", [](const ReportRow& r) { return r.figure("bandwidth_mbps") != nullptr; },
             [](const ReportRow& r) { return osu_number(r, "bandwidth_mbps"); });
  add_column(optional, rows, "speedup", [](const ReportRow& r) { return r.speedup.has_value(); },
             [](const ReportRow& r) { return r.speedup ? speedup_text(*r.speedup, r.speedup_ci, false) : "-"; });
  add_column(optional, rows, "slowest", [](const ReportRow& r) { return r.ranks > 1; }, [](const ReportRow& r) {
    if (r.status == CaseStatus::skipped || r.ranks < 2) return std::string("-");
    return "r" + std::to_string(r.slowest_rank) + format_number(" %.2fx", r.slowest_ratio);
  }, true);
}

// One experiment's rows as OSU prints them: the message size and its latency (us) or bandwidth (MB/s), no bus
// bandwidth; a line naming what every row shares above, and what the numbers are below.
std::string osu_block(const std::vector<const ReportRow*>& rows) {
  const ReportRow& first = *rows.front();
  const bool latency_only = std::all_of(rows.begin(), rows.end(), [](const ReportRow* r) {
    return r->params.has("pattern") && r->params.get_string("pattern") == "latency";
  });
  // Bytes is a column of its own; latency sends one message at a time, whatever the window.
  auto [shared, cols] = split_keys(rows, latency_only ? std::vector<std::string>{"bytes", "window"}
                                                      : std::vector<std::string>{"bytes"});
  const bool modes = std::any_of(rows.begin(), rows.end(), [&](const ReportRow* r) { return r->mode != first.mode; });
  add_column(cols, rows, "mode", [modes](const ReportRow&) { return modes; },
             [](const ReportRow& r) { return std::string(mode_name(r.mode)); }, true);
  cols.insert(cols.begin(), OsuColumn{"#", {}, false});
  for (const auto* r : rows) cols.front().cells.push_back(std::to_string(r->case_index + 1));
  std::vector<OsuColumn> optional;
  osu_number_columns(rows, cols, optional);
  const OsuColumn status{"status", {}, true};
  std::string table;
  for (std::size_t kept = optional.size() + 1; kept-- > 0;) {
    std::vector<OsuColumn> all = cols;
    all.insert(all.end(), optional.begin(), optional.begin() + static_cast<std::ptrdiff_t>(kept));
    all.push_back(status);
    for (const auto* r : rows) all.back().cells.push_back(status_name(r->status));
    table = render_osu_columns(all, rows.size());
    if (fits_terminal(table)) break;
  }
  const std::string groups = first.groups > 1 ? ", " + std::to_string(first.groups) + " groups of " +
                                                    std::to_string(first.group_size) : "";
  const std::string comm = first.comm ? std::string(", comm ") + comm_name(*first.comm) : "";
  return wrap(first.name + ": p2p," + shared + (modes ? "" : std::string(", ") + mode_name(first.mode)) + ", " +
              std::to_string(first.ranks) + " rank(s) on " + std::to_string(first.nodes) + " node(s)" + comm +
              groups) + table;
}

// What the block's numbers are, for those it shows.
std::string osu_legend(const std::vector<const ReportRow*>& rows) {
  const auto has = [&](const char* key) {
    return std::any_of(rows.begin(), rows.end(), [key](const ReportRow* r) { return r->figure(key) != nullptr; });
  };
  std::string out;
  if (has("latency_us")) out += "latency: half a round trip (osu_latency); ";
  if (has("bandwidth_mbps")) {
    out += "bandwidth: a window's bytes (window x message, bibw both ways) over its time, up to the "
           "acknowledgement in bw (osu_bw, osu_bibw), in MB/s = 10^6 B/s; ";
  }
  return out + "each the mean over ranks, median over samples";
}

// The report in OSU's terms: the latency of a ping-pong (half its round trip) in seconds and in us, a window's
// bandwidth in MB/s (10^6 B/s, OSU's unit), beside the op time and algbw every transfer has; the table's block has
// OSU's columns and no bus bandwidth (OSU prints none).
class P2pAnalysis final : public RowAnalysis {
 public:
  void row(const RunRecord&, const CaseRecord& c, const RowSettings&, ReportRow& r) const override {
    if (!c.params.has("pattern") || !r.op_time_s || !r.algbw_gbps) return;
    // latency_us and bandwidth_mbps have no head and no words: JSON and CSV keys only; the block prints them.
    if (c.params.get_string("pattern") == "latency") {
      r.figures.push_back({"latency_s", *r.op_time_s / 2, FigureKind::seconds, "latency", ""});
      r.figures.push_back({"latency_us", *r.op_time_s / 2 * 1e6, FigureKind::seconds, "", ""});
    } else {
      r.figures.push_back({"bandwidth_mbps", *r.algbw_gbps * 1e3, FigureKind::seconds, "", ""});
    }
  }
  std::string block(const std::vector<const ReportRow*>& rows) const override {
    if (rows.empty()) return "";
    return osu_block(rows) + wrap(osu_legend(rows));
  }
};

class P2pType final : public TypedWorkloadType<P2pParams> {
 public:
  P2pType() : TypedWorkloadType(p2p_schema()) {}
  P2pParams parse(const Params& p) const override { return P2pParams::from(p); }
  const RowAnalysis* analysis() const override { return &analysis_; }
  std::vector<Params> examples() const override {
    return example_params(schema(), {"pattern = [\"latency\", \"bw\", \"bibw\"]\nbytes = 4102\niters = 3",
                                     "pattern = \"bw\"\nbytes = 1048576\niters = 2\nwindow = 4\nscope = \"intra-node\""});
  }

 private:
  std::unique_ptr<Workload> make_for(const P2pParams& p) const override { return std::make_unique<P2pWorkload>(p); }
  MemoryNeed memory_for(const P2pParams& p, bool buffers_on_host) const override {
    const double b = static_cast<double>(message_bytes(p.bytes));
    const double poison = std::min(b, static_cast<double>(Device::kPoisonChunkBytes));
    MemoryNeed need{2 * b + kAckBytes, 2 * b + poison};  // device: send, receive; host: the data, its check
    if (!buffers_on_host) need.host_bytes += 2 * b;  // MPI on a GPU stages both through pinned host memory
    return need;
  }
  CaseWork work_for(const P2pParams& p, const JobShape& job) const override {
    const ScopeGroups g = scope_groups(p.scope, job);
    CaseWork cw;
    cw.skip_reason = p2p_skip_reason(p, job.nodes, 0, g.size);
    // Transfers per iteration: a message and its echo, or a window of messages (bibw: of exchanges, whose two
    // messages cross at once, as a full-duplex link carries them and as each receiving rank copies its own within a
    // node: priced as one); a bw window's 4-byte acknowledgement is left out.
    const double per_iter = p.pattern == P2pPattern::latency ? 2.0 : static_cast<double>(p.window);
    const double m = static_cast<double>(message_bytes(p.bytes));
    cw.sample.add_transfer({std::string("p2p-") + pattern_name(p.pattern), m, 1.0, 2, g.across_nodes ? 2 : 1, 0},
                           static_cast<double>(p.iters) * per_iter);
    cw.sample.across_nodes = g.across_nodes;
    cw.turns = g.count * pairs_in_group_of(g.size);
    cw.busy_ranks_per_node = ranks_per_node(job);
    return cw;
  }
  std::optional<Scope> scope_for(const P2pParams& p) const override { return p.scope; }

  P2pAnalysis analysis_;
};

}  // namespace

P2pParams P2pParams::from(const Params& p) {
  P2pParams out;
  out.pattern = parse_pattern(p.get_string("pattern"));
  out.bytes = static_cast<std::size_t>(p.get_int("bytes"));
  out.iters = p.get_int("iters");
  // Latency sends one message at a time; a file written before the key existed ran bw and bibw without a window.
  out.window = out.pattern != P2pPattern::latency && p.has("window") ? p.get_int("window") : 1;
  out.scope = parse_scope(p.get_string("scope"));
  return out;
}

const WorkloadType& p2p_type() {
  static const P2pType t;
  return t;
}

std::string P2pWorkload::skip_reason(const CaseContext& ctx) const {
  return p2p_skip_reason(p_, ctx.nodes, ctx.group->index, ctx.size());
}

void P2pWorkload::setup(CaseContext& ctx, std::uint64_t) {
  rank_ = ctx.rank();
  size_ = ctx.size();
  peer_ = pair_partner(rank_, size_);
  lower_ = rank_ < peer_;
  count_ = message_bytes(p_.bytes) / dtype_size(kType);
  send_ = ctx.dev.alloc(count_ * dtype_size(kType));
  recv_ = ctx.dev.alloc(count_ * dtype_size(kType));
  ack_ = ctx.dev.alloc(kAckBytes);
  fill(ctx);
}

// This rank's pattern in its send buffer; the receive buffer NaNs, which the check counts wrong where nothing came.
void P2pWorkload::fill(CaseContext& ctx) {
  const CollShape shape = coll_shape(CollOp::pairs, message_bytes(p_.bytes), kType, size_);
  const auto data = coll_send_data(CollOp::pairs, kType, rank_, size_, shape);
  ctx.dev.copy_to_device(send_, data.data(), data.size());
  ctx.dev.poison(recv_.data(), recv_.bytes());
  ctx.dev.poison(ack_.data(), ack_.bytes());
}

// Each message is enqueued and the data plane returns: a window's messages are in flight together, and its end is
// the acknowledgement (bw) or the last exchange (bibw).
void P2pWorkload::one_op(CaseContext& ctx) {
  DataComm& d = ctx.data();
  switch (p_.pattern) {
    case P2pPattern::latency:
      if (lower_) {
        d.send(send_.data(), peer_, count_, kType);
        d.recv(recv_.data(), peer_, count_, kType);
      } else {
        d.recv(recv_.data(), peer_, count_, kType);
        d.send(send_.data(), peer_, count_, kType);
      }
      return;
    case P2pPattern::bw:
      // The sender's window ends when the receiver has every message: its acknowledgement (the first element it
      // sends), as osu_bw's.
      if (lower_) {
        d.send_window(send_.data(), peer_, count_, kType, p_.window);
        d.recv(ack_.data(), peer_, 1, kType);
      } else {
        d.recv_window(recv_.data(), peer_, count_, kType, p_.window);
        d.send(send_.data(), peer_, 1, kType);
      }
      return;
    case P2pPattern::bibw:
      d.sendrecv_window(send_.data(), peer_, recv_.data(), peer_, count_, kType, p_.window);
      return;
  }
}

void P2pWorkload::run_sample(CaseContext& ctx) {
  for (std::int64_t i = 0; i < p_.iters; ++i) one_op(ctx);
}

double P2pWorkload::bytes_per_sample() const { return op_bytes() * static_cast<double>(p_.iters); }

double P2pWorkload::op_bytes() const { return op_bytes_of(p_); }

// One sample's pattern again on fresh buffers; each received message checked against the peer's data.
Verification P2pWorkload::verify(CaseContext& ctx) {
  fill(ctx);
  const std::int64_t iters = std::exchange(p_.iters, 1);
  run_sample(ctx);
  p_.iters = iters;
  ctx.synchronize();
  const bool got_message = p_.pattern != P2pPattern::bw || !lower_;
  const std::size_t elements = got_message ? count_ : 1;
  std::vector<unsigned char> got(elements * dtype_size(kType));
  ctx.dev.copy_async(got.data(), got_message ? recv_.data() : ack_.data(), got.size(), CopyKind::d2h);
  ctx.dev.synchronize();
  Verification v;
  v.wrong_elements = wrong_elements_from(kType, peer_, size_, coll_shape(CollOp::pairs, got.size(), kType, size_),
                                         got.data());
  v.max_error = static_cast<double>(v.wrong_elements);
  v.ok = v.wrong_elements == 0;
  return v;
}

int P2pWorkload::turn(const CaseContext& ctx, int) const {
  return group_turn(ctx.group->index, ctx.rank() % pairs_in_group_of(ctx.size()));  // each pair of each group alone
}

}  // namespace gpuscale
