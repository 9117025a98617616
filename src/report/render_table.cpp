// The report as text: by default one block per experiment in at most 80
// columns, with only what varies inside it; --wide: every column in one table.
#include <algorithm>
#include <cmath>

#include "core/text.hpp"
#include "report/analysis.hpp"
#include "report/report.hpp"
#include "report/report_notes.hpp"

namespace gpuscale {

namespace {

std::string speedup_cell(const ReportRow& r, bool wide) {
  return r.speedup ? speedup_text(*r.speedup, r.speedup_ci, wide) : "-";
}

std::string slowest_cell(const ReportRow& r) {
  if (r.status == CaseStatus::skipped || r.ranks < 2) return "-";
  return "r" + std::to_string(r.slowest_rank) + format_number(" %.2fx", r.slowest_ratio);
}

// "ok", "skipped", ...; with the host's mark where it made the numbers doubtful: "ok !d".
std::string status_cell(const ReportRow& r) {
  const std::string name = status_name(r.status);
  return r.host.doubtful() ? name + " " + r.host.mark() : name;
}

// " status !: ..." where a row has a mark, else "".
std::string marks_legend(const std::vector<ReportRow>& rows) {
  const bool any = std::any_of(rows.begin(), rows.end(), [](const ReportRow& r) { return r.host.doubtful(); });
  return any ? std::string(" status !: the host made the case's numbers doubtful: ") + kNoiseMarks +
                   " (the notes say how)."
             : "";
}

std::string percent_cell(const std::optional<double>& v) {
  return v ? format_number("%.0f%%", *v * 100) : "-";
}

// A share that can be small: two significant digits below 10% ("0.68%", "2.5%"), whole percents above ("87%").
std::string share_cell(double v) {
  const double pct = v * 100;
  return format_number(pct >= 9.95 ? "%.0f%%" : pct >= 0.995 ? "%.1f%%" : "%.2g%%", pct);
}

// Three significant digits, no unit (the column head has it): 1234, 138, 72.1, 8.83, 0.480.
std::string rate_cell(const std::optional<double>& v) { return v ? format_sig3(*v) : "-"; }

// What the header says of a run that has not completed: still running (a
// process holds the file's write lock), or ended early and how. A file whose
// status says running though no process holds its lock lost its writer
// (killed outright), unless the writer runs on another machine and the file
// system does not share locks (lastUpdate then tells).
std::string not_complete(const RunRecord& run, std::size_t rows) {
  std::string cases = std::to_string(rows);
  if (run.cases_planned > 0) cases += " of " + std::to_string(run.cases_planned);
  cases += " case(s)";
  const std::string update = run.last_update.empty() ? "" : ", last update " + run.last_update;
  if (run.being_written) return "running: " + cases + " finished so far" + update;
  const std::string dead = run.status == "running" ? ", but no process holds its write lock: the writer died, or "
                                                     "runs on another machine" : "";
  return "WARNING: the run did not complete (status: " + run.status + dead + "); incomplete: " + cases + " below" +
         update;
}

// The header about the run and its warnings, wrapped to a terminal unless `wide` (then a line each).
std::string run_header(const std::string& path, const RunRecord& run, std::size_t rows, bool wide) {
  const auto wrap = [wide](const std::string& s) { return wide ? s + "\n" : gpuscale::wrap(s); };
  const std::string facts = std::to_string(run.ranks.size()) + " rank(s) on " + std::to_string(run.nodes) +
                            " node(s), backend " + backend_name(run.backend) + ", gpuscale " + run.software_version +
                            ", " + run.date;
  // The path on a line of its own when both do not fit on one: the run's size then stays on one line.
  std::string out = path + ": " + facts + "\n";
  if (!wide && out.size() - 1 > kTerminalWidth) out = path + ":\n  " + gpuscale::wrap(facts, kTerminalWidth - 2);
  for (const auto& w : run.warnings) out += wrap("WARNING: " + w);
  if (!run.complete) out += wrap(not_complete(run, rows));
  return out;
}

std::string figure_text(const Figure& f) {
  switch (f.kind) {
    case FigureKind::seconds: return format_seconds(f.value);
    case FigureKind::share: return share_cell(f.value);
    case FigureKind::percent: return format_number("%.0f%%", f.value * 100);
    case FigureKind::case_number: return std::to_string(static_cast<std::size_t>(f.value) + 1);
  }
  return "";
}

// "phases compute 1.2 ms transfer 3 ms; exposed transfer 2 ms, overlap 40%": each phase's time, then the figures
// the workload words.
std::string phase_note(const ReportRow& r) {
  std::string n = "phases";
  for (const auto& [name, t] : r.phase_s) n += " " + name + " " + format_seconds(t);
  std::string sep = "; ";
  for (const auto& f : r.figures) {
    if (f.words.empty()) continue;
    n += sep + f.words + " " + figure_text(f);
    sep = ", ";
  }
  return n;
}

// The table columns the rows' figures ask for (Figure::head), in the order they first appear.
std::vector<std::string> figure_heads(const std::vector<const ReportRow*>& rows) {
  std::vector<std::string> heads;
  for (const auto* r : rows) {
    for (const auto& f : r->figures) {
      if (!f.head.empty() && std::find(heads.begin(), heads.end(), f.head) == heads.end()) heads.push_back(f.head);
    }
  }
  return heads;
}

// The cell of the figure headed `head` in a row; "-" where it has none.
std::string figure_cell(const ReportRow& r, const std::string& head) {
  for (const auto& f : r.figures) {
    if (f.head == head) return figure_text(f);
  }
  return "-";
}

// What the notes under a table say about the rows, once each; `grouped`: a flag or status that several cases of an
// experiment share, once for all of them (report/report_notes.hpp). A phase note is each case's own numbers.
std::vector<std::string> row_notes(const std::vector<ReportRow>& rows, bool grouped) {
  std::vector<std::pair<std::string, std::size_t>> experiments;
  for (const auto& in : by_experiment(rows)) experiments.emplace_back(in.front()->name, in.size());
  ReportNotes notes(std::move(experiments), grouped);
  for (const auto& r : rows) {
    const std::size_t n = r.case_index + 1;
    notes.add(r.note);
    for (const auto& f : r.flags) notes.add_flag(r.name, n, f);
    for (const auto& x : r.notes) notes.add(x);
    if (!r.phase_s.empty()) notes.add("case " + std::to_string(n) + ": " + phase_note(r));
    if (r.status == CaseStatus::skipped) {
      notes.add_case(r.name, n, "skipped", r.status_reason, CaseNoteForm::kind_first);
    }
    if (r.status == CaseStatus::verify_failed && r.scope) {
      notes.add_case(r.name, n, "verify-failed", "up to " + std::to_string(r.wrong_elements) +
                     " wrong element(s) on a rank", CaseNoteForm::kind_first);
    }
    if (r.speedup && !r.speedup_ci) {
      notes.add_flag(r.name, n, "fewer than " + std::to_string(kMinIntervalSamples) +
                     " samples: the speedup has no interval (raise reps to tell it from noise)");
    }
  }
  return notes.lines();
}

// A row in OSU's terms (p2p's: latency in us, bandwidth in MB/s, the figures latency_us and bandwidth_mbps):
// OSU prints no bus bandwidth, and neither does the table.
bool in_osu_terms(const ReportRow& r) { return r.figure("latency_us") || r.figure("bandwidth_mbps"); }

bool is_transfer(const ReportRow& r) {
  return r.busbw_gbps.has_value() || (r.scope && r.status == CaseStatus::skipped);
}

// A block of transfers: some row that ran has a bus bandwidth, or none ran and a skipped one had a scope. A
// workload with a scope but no single operation (dp_step) is not one, whatever its skipped rows.
bool transfer_block(const std::vector<const ReportRow*>& rows) {
  const auto ran = [](const ReportRow* r) { return r->status != CaseStatus::skipped; };
  if (std::any_of(rows.begin(), rows.end(), ran)) {
    return std::any_of(rows.begin(), rows.end(), [](const ReportRow* r) { return r->busbw_gbps.has_value(); });
  }
  return std::any_of(rows.begin(), rows.end(), [](const ReportRow* r) { return is_transfer(*r); });
}

// Every column in one table (report --wide).
std::string wide_table(const std::vector<ReportRow>& rows) {
  const std::vector<std::string> head{"#",      "name",    "mode",    "ranks",     "nodes",      "parameters",
                                      "median", "min",     "p95",     "enqueue",   "rate/rank",  "rate total",
                                      "busbw",  "op time (fastest-slowest rank)", "speedup", "eff",
                                      "slowest", "status"};
  constexpr std::ptrdiff_t kBusbw = 12, kFigures = 16;  // the columns of transfers; where figures go
  auto rate = [](const ReportRow& r, bool total) {
    const auto& gf = total ? r.total_gflops : r.gflops;
    const auto& gb = total ? r.total_gbps : (r.algbw_gbps ? r.algbw_gbps : r.gbps);
    return gf ? format_sig3(*gf) + " GF/s" : gb ? format_sig3(*gb) + " GB/s" : std::string("-");
  };
  auto op_time = [](const ReportRow& r) {
    if (!r.op_time_s) return std::string("-");
    return format_seconds(*r.op_time_s) + " (" + format_seconds(*r.op_time_min_s) + "-" +
           format_seconds(*r.op_time_max_s) + ")";
  };
  std::vector<const ReportRow*> all;
  for (const auto& r : rows) all.push_back(&r);
  const std::vector<std::string> heads = figure_heads(all);  // after eff
  std::vector<std::vector<std::string>> cells{head};
  cells[0].insert(cells[0].begin() + kFigures, heads.begin(), heads.end());
  bool transfers = false;
  for (const auto& r : rows) {
    std::string label = r.params_label;
    if (r.scope && r.status != CaseStatus::skipped) {
      label += " (" + std::to_string(r.groups) + "x" + std::to_string(r.group_size) + ")";
    }
    transfers = transfers || is_transfer(r);
    cells.push_back({std::to_string(r.case_index + 1), r.name, mode_name(r.mode), std::to_string(r.ranks),
                     std::to_string(r.nodes), label, format_seconds(r.median_s), format_seconds(r.min_s),
                     format_seconds(r.p95_s), format_seconds(r.enqueue_median_s), rate(r, false), rate(r, true),
                     r.busbw_gbps && !in_osu_terms(r) ? format_sig3(*r.busbw_gbps) + " GB/s" : "-", op_time(r),
                     speedup_cell(r, true),
                     percent_cell(r.efficiency), slowest_cell(r), status_cell(r)});
    for (std::size_t i = 0; i < heads.size(); ++i) {
      cells.back().insert(cells.back().begin() + kFigures + static_cast<std::ptrdiff_t>(i), figure_cell(r, heads[i]));
    }
  }
  // The bus bandwidth and the op time are left out where no row is a transfer.
  if (!transfers) {
    for (auto& row : cells) row.erase(row.begin() + kBusbw, row.begin() + kBusbw + 2);
  }
  const std::size_t last = cells[0].size() - 1;
  std::string out = align_columns(cells, [last](std::size_t i) { return i == 1 || i == 2 || i == 5 || i == last; });
  out += "median/min/p95: sample time (serial: sum over turns; parallel: makespan); enqueue: median host time until "
         "a sample's work was enqueued; speedup = serial median / parallel median, (lo-hi): its 95% interval, "
         "\"uncertain\" where that holds 1; eff = speedup / serial turns; slowest: rank with the largest median and "
         "its median over the median of the other ranks'\n";
  if (const std::string marks = marks_legend(rows); !marks.empty()) out += marks.substr(1) + "\n";
  if (transfers) {
    out += "transfers: parameters end with (groups x ranks per group); op time: one operation, mean over ranks of "
           "device time / iters, median over samples (fastest-slowest rank: the least and the most over ranks in "
           "each sample, median over samples); rate/rank is algbw = bytes / op time; busbw = algbw x nccl-tests' "
           "factor\n";
  }
  return out;
}

// A column of a block: its head, one cell per row, and whether it reads left-aligned.
struct Column {
  std::string head;
  std::vector<std::string> cells;
  bool left = false;
};

// One experiment's columns: the case number, the parameters that vary, the
// numbers (always kept), the optional ones (dropped last-first while too wide)
// and the status; `shared`: what all rows have in common.
struct BlockColumns {
  std::string shared;
  std::vector<Column> head, params, numbers, optional;
  Column status;
};

// Mode, ranks and nodes: a column where they vary, else words in the shared line.
void job_columns(const std::vector<const ReportRow*>& rows, BlockColumns& b) {
  const ReportRow& first = *rows.front();
  auto add_if_varies = [&](const char* head, auto get, bool left) {
    const bool varies =
        std::any_of(rows.begin(), rows.end(), [&](const ReportRow* r) { return get(*r) != get(first); });
    if (!varies) return false;
    b.numbers.push_back({head, {}, left});
    for (const auto* r : rows) b.numbers.back().cells.push_back(get(*r));
    return true;
  };
  const auto mode = [](const ReportRow& r) { return std::string(mode_name(r.mode)); };
  const auto ranks = [](const ReportRow& r) { return std::to_string(r.ranks); };
  const auto nodes = [](const ReportRow& r) { return std::to_string(r.nodes); };
  if (!add_if_varies("mode", mode, true)) b.shared += std::string(", ") + mode_name(first.mode);
  if (!add_if_varies("ranks", ranks, false)) b.shared += ", " + ranks(first) + " rank(s)";
  if (!add_if_varies("nodes", nodes, false)) b.shared += " on " + nodes(first) + " node(s)";
}

// Times and rates: a transfer's op time and bandwidths, else the median and the rate per rank; then the
// workload's own figures (a kernel ladder's of vendor), kept, not dropped for width.
void number_columns(const std::vector<const ReportRow*>& rows, BlockColumns& b) {
  auto column = [&](const std::string& head, auto cell) {
    b.numbers.push_back({head, {}, false});
    for (const auto* r : rows) b.numbers.back().cells.push_back(r->status == CaseStatus::skipped ? "-" : cell(*r));
  };
  const bool transfers = transfer_block(rows);
  const bool flops = std::any_of(rows.begin(), rows.end(), [](const ReportRow* r) { return r->gflops.has_value(); });
  if (transfers) {
    column("op time", [](const ReportRow& r) { return r.op_time_s ? format_seconds(*r.op_time_s) : "-"; });
    column("algbw GB/s", [](const ReportRow& r) { return rate_cell(r.algbw_gbps); });
    column("busbw GB/s", [](const ReportRow& r) { return rate_cell(r.busbw_gbps); });
  } else {
    column("median", [](const ReportRow& r) { return format_seconds(r.median_s); });
    if (flops) column("GF/s/rank", [](const ReportRow& r) { return rate_cell(r.gflops); });
    else column("GB/s/rank", [](const ReportRow& r) { return rate_cell(r.gbps); });
  }
  for (const auto& h : figure_heads(rows)) column(h, [&h](const ReportRow& r) { return figure_cell(r, h); });
}

void optional_columns(const std::vector<const ReportRow*>& rows, BlockColumns& b) {
  if (std::any_of(rows.begin(), rows.end(), [](const ReportRow* r) { return r->speedup; })) {
    b.optional.push_back({"speedup", {}, false});
    b.optional.push_back({"eff", {}, false});
    for (const auto* r : rows) {
      b.optional[0].cells.push_back(speedup_cell(*r, false));
      b.optional[1].cells.push_back(percent_cell(r->efficiency));
    }
  }
  if (std::any_of(rows.begin(), rows.end(), [](const ReportRow* r) { return r->ranks > 1; })) {
    b.optional.push_back({"slowest", {}, true});
    for (const auto* r : rows) b.optional.back().cells.push_back(slowest_cell(*r));
  }
}

BlockColumns block_columns(const std::vector<const ReportRow*>& rows) {
  BlockColumns b;
  const ParamSplit split = split_params(rows);
  b.shared = split.shared;
  for (const auto& [key, cells] : split.varying) b.params.push_back({key, cells, true});
  b.head = {{"#", {}, false}};
  for (const auto* r : rows) b.head[0].cells.push_back(std::to_string(r->case_index + 1));
  job_columns(rows, b);
  number_columns(rows, b);
  optional_columns(rows, b);
  b.status = {"status", {}, true};
  for (const auto* r : rows) b.status.cells.push_back(status_cell(*r));
  return b;
}

std::string render_columns(const std::vector<Column>& cols, std::size_t rows) {
  std::vector<std::vector<std::string>> cells(rows + 1);
  for (const auto& c : cols) {
    cells[0].push_back(c.head);
    for (std::size_t i = 0; i < rows; ++i) cells[i + 1].push_back(c.cells[i]);
  }
  return align_columns(cells, [&cols](std::size_t i) { return cols[i].left; });
}

// The table with or without the parameter columns and the first `optional_kept` optional ones.
std::string assemble(const BlockColumns& b, std::size_t rows, bool with_params, std::size_t optional_kept) {
  std::vector<Column> cols = b.head;
  if (with_params) cols.insert(cols.end(), b.params.begin(), b.params.end());
  cols.insert(cols.end(), b.numbers.begin(), b.numbers.end());
  cols.insert(cols.end(), b.optional.begin(), b.optional.begin() + static_cast<std::ptrdiff_t>(optional_kept));
  cols.push_back(b.status);
  return render_columns(cols, rows);
}

// One experiment's rows: a line naming what all of them share, then a table
// of what varies and their numbers, narrowed to fit a terminal.
std::string block(const std::vector<const ReportRow*>& rows) {
  const BlockColumns b = block_columns(rows);
  std::string out = wrap(rows.front()->name + ": " + rows.front()->workload + "," + b.shared);
  for (std::size_t kept = b.optional.size() + 1; kept-- > 0;) {
    const std::string table = assemble(b, rows.size(), true, kept);
    if (fits_terminal(table) || (kept == 0 && b.params.empty())) return out + table;
  }
  // Still too wide: the parameters that vary go on a line of their own above
  // each row, and the optional columns come back as far as they fit.
  std::string table;
  for (std::size_t kept = b.optional.size() + 1; kept-- > 0;) {
    table = assemble(b, rows.size(), false, kept);
    if (fits_terminal(table)) break;
  }
  std::size_t line_end = table.find('\n');
  out += table.substr(0, line_end + 1);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    std::string params;
    for (const auto& c : b.params) params += " " + c.head + "=" + c.cells[i];
    out += wrap("#" + std::to_string(rows[i]->case_index + 1) + ":" + params, kTerminalWidth, "   ");
    const std::size_t next = table.find('\n', line_end + 1);
    out += table.substr(line_end + 1, next - line_end);
    line_end = next;
  }
  return out;
}

std::string compact_table(const std::vector<ReportRow>& rows) {
  std::string out;
  bool transfers = false;  // in the blocks below, which the legend then explains
  for (const auto& in : by_experiment(rows)) {
    const RowAnalysis* a = analysis_of(in.front()->workload);  // a workload's own view of its experiment, if any
    const std::string own = a ? a->block(in) : "";
    out += "\n" + (own.empty() ? block(in) : own);
    transfers = transfers || (own.empty() && transfer_block(in));
  }
  out += "\n" + wrap(std::string("median: sample time (serial: sum over turns; parallel: makespan). ") +
                     (transfers ? "op time: one operation, mean over ranks, median over samples; busbw = algbw x "
                                  "nccl-tests' factor. "
                                : "") +
                     "speedup: serial median / parallel median, \"(uncertain)\" where its 95% interval holds 1; "
                     "eff: speedup / serial turns; slowest: the rank with the largest median, over the median of "
                     "the other ranks'. --wide: every column." + marks_legend(rows));
  return out;
}

}  // namespace

bool fits_terminal(const std::string& text) {
  std::size_t from = 0;
  while (from < text.size()) {
    const std::size_t nl = text.find('\n', from);
    if (nl - from > kTerminalWidth) return false;
    from = nl + 1;
  }
  return true;
}

ParamSplit split_params(const std::vector<const ReportRow*>& rows) {
  const auto value_of = [](const Params& p, const std::string& key) { return p.has(key) ? to_string(p.at(key)) : "-"; };
  std::vector<std::string> keys;  // every parameter key, in order of appearance
  for (const auto* r : rows) {
    for (const auto& [k, v] : r->params.items()) {
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
    }
  }
  ParamSplit out;
  for (const auto& k : keys) {
    std::vector<std::string> cells;
    for (const auto* r : rows) cells.push_back(value_of(r->params, k));
    if (std::all_of(cells.begin(), cells.end(), [&](const std::string& c) { return c == cells[0]; })) {
      out.shared += " " + k + "=" + cells[0];
    } else {
      out.varying.emplace_back(k, std::move(cells));
    }
  }
  return out;
}

std::vector<std::vector<const ReportRow*>> by_experiment(const std::vector<ReportRow>& rows) {
  std::vector<std::vector<const ReportRow*>> out;
  for (const auto& r : rows) {
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& b) { return b.front()->name == r.name; });
    if (it == out.end()) out.push_back({&r});
    else it->push_back(&r);
  }
  return out;
}

std::string align_columns(const std::vector<std::vector<std::string>>& cells,
                          const std::function<bool(std::size_t)>& left) {
  std::vector<std::size_t> width;
  for (const auto& row : cells) {
    width.resize(std::max(width.size(), row.size()), 0);
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : cells) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      const std::string pad(width[i] - row[i].size(), ' ');
      line += (i ? "  " : "") + (left(i) ? row[i] + pad : pad + row[i]);
    }
    out += line.substr(0, line.find_last_not_of(' ') + 1) + "\n";
  }
  return out;
}

std::string render_table(const std::string& path, const RunRecord& run, const std::vector<ReportRow>& rows,
                         bool wide) {
  std::string out = run_header(path, run, rows.size(), wide) + (wide ? wide_table(rows) : compact_table(rows));
  // --wide, the view of every column, also keeps every case's notes apart.
  for (const auto& n : row_notes(rows, !wide)) out += wide ? "note: " + n + "\n" : wrap("note: " + n);
  for (const auto& r : rows) {
    for (const auto& line : r.section_lines) out += line + "\n";
  }
  return out;
}

}  // namespace gpuscale
