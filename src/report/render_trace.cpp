// report --format trace: the Trace Event Format's JSON object form, written
// event by event (a run of 64 ranks x 10^5 samples is millions of events).
#include "report/render_trace.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <numeric>
#include <ostream>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/text.hpp"
#include "report/analysis.hpp"
#include "report/json_params.hpp"
#include "report/report.hpp"

namespace gpuscale {

namespace {

// A JSON string, its bytes that are not UTF-8 (a file of another writer) as U+FFFD.
std::string quoted(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string dump(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string micros(double s) {
  char b[48];
  std::snprintf(b, sizeof b, "%.3f", s * 1e6);
  return b;
}

// The list as a message quotes it: a long one cut short, so that the message stays one readable line.
std::string cases_option(const std::string& text) {
  return "--cases " + (text.size() > 60 ? text.substr(0, 57) + "..." : text);
}

std::size_t number_at(const std::string& text, const std::string& part) {
  const bool digits = !part.empty() && part.size() <= 9 &&
                      std::all_of(part.begin(), part.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  const std::size_t n = digits ? std::stoul(part) : 0;
  if (n == 0) {
    throw InputError(cases_option(text) + ": expected case numbers (from 1) and ranges, e.g. --cases 1,3-5");
  }
  return n;
}

}  // namespace

std::vector<std::size_t> parse_case_numbers(const std::string& text) {
  constexpr std::size_t kMost = 1000000;  // numbers in all, counted before any is made
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  std::size_t count = 0;
  for (std::size_t from = 0; from <= text.size();) {
    const std::size_t comma = std::min(text.find(',', from), text.size());
    const std::string item = text.substr(from, comma - from);
    const std::size_t dash = item.find('-');
    const std::size_t lo = number_at(text, item.substr(0, dash));
    const std::size_t hi = dash == std::string::npos ? lo : number_at(text, item.substr(dash + 1));
    if (hi < lo) throw InputError(cases_option(text) + ": the range " + item + " runs backwards (write it low-high)");
    if (hi - lo >= kMost) throw InputError(cases_option(text) + ": the range " + item + " holds too many cases");
    count += hi - lo + 1;
    if (count > kMost) {
      throw InputError("--cases: the list names more than " + std::to_string(kMost) + " cases in all (a file "
                       "holds far fewer); give the cases once each");
    }
    ranges.emplace_back(lo, hi);
    from = comma + 1;
  }
  std::vector<std::size_t> out;
  out.reserve(count);
  for (const auto& [lo, hi] : ranges) {
    for (std::size_t n = lo; n <= hi; ++n) out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string trace_size_note(const std::string& path, const TraceCounts& counts, std::size_t cases_in_file,
                            std::size_t limit) {
  if (counts.events() <= limit) return "";
  const std::string mb = format_number("%.0f", static_cast<double>(counts.bytes) / 1e6);
  return "note: the trace of " + path + " holds " + std::to_string(counts.events()) + " events (about " + mb +
         " MB): above " + std::to_string(limit) + " events Perfetto's UI opens it slowly, if at all (the browser "
         "holds it in memory); --cases exports some of the " + std::to_string(cases_in_file) +
         " case(s), e.g. --cases 1 or --cases 1,3-4 (writing it all the same)";
}

std::string trace_us(std::int64_t ns, bool timestamp) {
  char b[48];
  const long long us = ns / 1000, frac = ns % 1000;
  std::snprintf(b, sizeof b, timestamp ? "%lld.%03lld1" : "%lld.%03lld", us, frac);
  return b;
}

TraceWriter::TraceWriter(std::ostream* out, const RunRecord& run, std::string source, double t0_s)
    : out_(out),
      run_(run),
      source_(std::move(source)),
      t0_s_(t0_s),
      next_tid_(static_cast<std::int64_t>(run.ranks.size()) + 1) {
  const std::string head = "{\"traceEvents\":[\n";
  if (out_) out_->write(head.data(), static_cast<std::streamsize>(head.size()));
  counts_.bytes += head.size();
  for (std::size_t r = 0; r < run.ranks.size(); ++r) process_metadata(r);
}

void TraceWriter::emit(const std::string& event) {
  if (!first_ && out_) out_->write(",\n", 2);
  if (out_) out_->write(event.data(), static_cast<std::streamsize>(event.size()));
  counts_.bytes += event.size() + (first_ ? 0 : 2);
  first_ = false;
}

// Rank r: pid r + 1, named for where it ran, sorted by rank.
void TraceWriter::process_metadata(std::size_t rank) {
  lanes_.resize(std::max(lanes_.size(), rank + 1));
  std::string where;
  if (rank < run_.ranks.size()) {
    const RankRecord& k = run_.ranks[rank];
    where = " (host " + k.hostname + ", local rank " + std::to_string(k.local_rank) + ")";
  }
  const std::string pid = std::to_string(rank + 1);
  ++counts_.metadata;
  emit("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + pid + ",\"args\":{\"name\":" +
       quoted("rank " + std::to_string(rank) + where) + "}}");
  ++counts_.metadata;
  emit("{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":" + pid + ",\"args\":{\"sort_index\":" +
       std::to_string(rank) + "}}");
}

// The thread of the rank's lane that is free from start_ns on: the first whose last slice ended by then, or a
// new one, named (and sorted) after the lane.
std::int64_t TraceWriter::place(std::size_t rank, const std::string& lane, std::int64_t start_ns,
                                std::int64_t end_ns) {
  if (rank >= lanes_.size()) process_metadata(rank);
  auto& lanes = lanes_[rank];
  auto it = std::find_if(lanes.begin(), lanes.end(), [&](const Lane& l) { return l.name == lane; });
  if (it == lanes.end()) it = lanes.insert(lanes.end(), Lane{lane, {}});
  for (auto& row : it->rows) {
    if (row.end_ns <= start_ns) {
      row.end_ns = end_ns;
      return row.tid;
    }
  }
  const std::int64_t tid = next_tid_++;
  it->rows.push_back({tid, end_ns});
  const std::size_t n = it->rows.size();
  const std::string name = n == 1 ? lane : lane + " (" + std::to_string(n) + ")";
  const std::string ids = "\"pid\":" + std::to_string(rank + 1) + ",\"tid\":" + std::to_string(tid);
  const auto order = static_cast<std::size_t>(it - lanes.begin()) * 1000 + n - 1;
  ++counts_.metadata;
  emit("{\"name\":\"thread_name\",\"ph\":\"M\"," + ids + ",\"args\":{\"name\":" + quoted(name) + "}}");
  ++counts_.metadata;
  emit("{\"name\":\"thread_sort_index\",\"ph\":\"M\"," + ids + ",\"args\":{\"sort_index\":" +
       std::to_string(order) + "}}");
  return tid;
}

std::int64_t TraceWriter::ns(double t_s) {
  counts_.earliest_s = std::min(counts_.earliest_s, t_s);
  return std::max<std::int64_t>(0, std::llround((t_s - t0_s_) * 1e9));
}

void TraceWriter::slice(const char* cat, const std::string& name, std::int64_t pid, std::int64_t tid,
                        std::int64_t start_ns, std::int64_t end_ns, const std::string& args) {
  buf_.clear();
  buf_ += "{\"name\":";
  buf_ += quoted(name);
  buf_ += ",\"cat\":\"";
  buf_ += cat;
  buf_ += "\",\"ph\":\"X\",\"ts\":";
  buf_ += trace_us(start_ns, true);
  buf_ += ",\"dur\":";
  buf_ += trace_us(end_ns - start_ns, false);
  buf_ += ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) + ",\"args\":" + args + "}";
  emit(buf_);
}

// Each rank's part of the case: from its first sample's start to its last one's end, with the case's parameters.
void TraceWriter::add_case_spans(const CaseRecord& c) {
  const std::size_t reps = static_cast<std::size_t>(c.reps);
  const std::string name = "case " + std::to_string(c.index + 1) + " " + c.experiment + " [" + mode_name(c.mode) + "]";
  for (std::size_t r = 0; r < static_cast<std::size_t>(c.ranks); ++r) {
    const auto first = c.wall_start_s.begin() + static_cast<std::ptrdiff_t>(r * reps);
    const auto last = c.wall_end_s.begin() + static_cast<std::ptrdiff_t>(r * reps);
    const std::int64_t start = ns(*std::min_element(first, first + static_cast<std::ptrdiff_t>(reps)));
    const std::int64_t end = ns(*std::max_element(last, last + static_cast<std::ptrdiff_t>(reps)));
    nlohmann::ordered_json args{{"case", c.index + 1},          {"experiment", c.experiment},
                                {"workload", c.workload},          {"mode", mode_name(c.mode)},
                                {"backend", backend_name(c.backend)}, {"status", status_name(c.status)},
                                {"rank", r},                       {"reps", c.reps}};
    if (r < c.warmup_samples.size()) args["warmup_samples"] = c.warmup_samples[r];
    if (!c.note.empty()) args["note"] = c.note;
    args["params"] = params_json<nlohmann::ordered_json>(typed_params(c.workload, c.params));  // booleans as such
    ++counts_.cases;
    slice("case", name, static_cast<std::int64_t>(r) + 1, place(r, "cases", start, end), start, end, dump(args));
  }
}

void TraceWriter::add_samples(const CaseRecord& c) {
  const std::size_t reps = static_cast<std::size_t>(c.reps);
  const std::string prefix = "case " + std::to_string(c.index + 1) + " sample ";
  const std::string case_arg = "{\"case\":" + std::to_string(c.index + 1);
  for (std::size_t r = 0; r < static_cast<std::size_t>(c.ranks); ++r) {
    for (std::size_t i = 0; i < reps; ++i) {
      const std::size_t k = r * reps + i;
      const std::int64_t start = ns(c.wall_start_s[k]), end = ns(c.wall_end_s[k]);
      const std::string args = case_arg + ",\"sample\":" + std::to_string(i) + ",\"rank\":" + std::to_string(r) +
                               ",\"device_time_us\":" + micros(c.device_time_s[k]) +
                               ",\"enqueue_us\":" + micros(c.enqueue_s[k]) + "}";
      ++counts_.samples;
      slice("sample", prefix + std::to_string(i), static_cast<std::int64_t>(r) + 1,
            place(r, "samples", start, end), start, end, args);
    }
  }
}

// Phase intervals by rank and start, each on its phase's lane: a slice named for the phase (Perfetto sums the
// slices of a name), its case and sample in args.
void TraceWriter::add_phases(const CaseRecord& c) {
  const auto col = phase_columns(c);
  if (col.empty()) return;
  const auto& rank = col[0]->ints;
  const auto& sample = col[1]->ints;
  const auto& phase = col[2]->ints;
  const auto& begin = col[3]->reals;
  const auto& finish = col[4]->reals;
  std::vector<std::size_t> order(rank.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::make_pair(rank[a], begin[a]) < std::make_pair(rank[b], begin[b]);
  });
  const std::string case_arg = "{\"case\":" + std::to_string(c.index + 1);
  for (const std::size_t k : order) {
    const auto r = static_cast<std::size_t>(rank[k]);
    const std::string& name = col[2]->levels.at(static_cast<std::size_t>(phase[k]));
    const std::int64_t start = ns(begin[k]), end = ns(finish[k]);
    const std::string args = case_arg + ",\"sample\":" + std::to_string(sample[k]) + ",\"rank\":" +
                             std::to_string(r) + ",\"phase\":" + quoted(name) + "}";
    ++counts_.phases;
    slice("phase", name, static_cast<std::int64_t>(r) + 1, place(r, "phase " + name, start, end), start, end, args);
  }
}

// Each GPU reading as counters of its rank, one per quantity ("sm_clock (MHz)"); values that were not readable
// (NaN, or -1 for an integer such as clock_event_reasons) are left out.
void TraceWriter::add_telemetry(const CaseRecord& c) {
  const CaseTable* t = find_table(c.tables, kTelemetryTable);
  if (!t) return;
  const auto key = columns_of(*t, {{"rank", ColumnType::integer}, {"time", ColumnType::real}});
  if (key.empty()) return;
  for (std::size_t i = 0; i < t->rows(); ++i) {
    const std::string pid = std::to_string(key[0]->ints[i] + 1);
    const std::string ts = trace_us(ns(key[1]->reals[i]), true);
    for (const auto& col : t->columns) {
      if (&col == key[0] || &col == key[1] || col.type == ColumnType::text) continue;
      const bool real = col.type == ColumnType::real;
      if (real ? !std::isfinite(col.reals[i]) : col.ints[i] < 0) continue;
      const std::string name = col.unit.empty() ? col.name : col.name + " (" + col.unit + ")";
      const std::string value = real ? format_number("%.17g", col.reals[i]) : std::to_string(col.ints[i]);
      ++counts_.counters;
      emit("{\"name\":" + quoted(name) + ",\"cat\":\"telemetry\",\"ph\":\"C\",\"ts\":" + ts + ",\"pid\":" + pid +
           ",\"args\":{\"value\":" + value + "}}");
    }
  }
}

void TraceWriter::add_case(const CaseRecord& c) {
  if (c.reps > 0 && !c.wall_start_s.empty()) {
    add_case_spans(c);
    add_samples(c);
    add_phases(c);
  }
  add_telemetry(c);
}

// After the events (a reader that stops at the array still has them all): the time unit chrome://tracing shows
// (the spec's default; Perfetto reads ts in µs whatever it says) and where the trace came from.
void TraceWriter::finish(const std::vector<std::size_t>& cases) {
  nlohmann::ordered_json other{{"source", source_},
                               {"software", run_.software + " " + run_.software_version},
                               {"schema_version", run_.schema_version},
                               {"date", run_.date},
                               {"backend", backend_name(run_.backend)},
                               {"ranks", run_.ranks.size()},
                               {"nodes", run_.nodes},
                               {"status", run_.status},
                               {"cases", cases},
                               {"t0_s", t0_s_},
                               {"clock", "ts: microseconds after t0_s seconds on the run's common clock; pid: "
                                         "rank + 1"}};
  const std::string tail = "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":" + dump(other) + "}\n";
  if (out_) out_->write(tail.data(), static_cast<std::streamsize>(tail.size()));
  counts_.bytes += tail.size();
}

}  // namespace gpuscale
