// A result file's timings as a timeline in the Trace Event Format (JSON) that
// Perfetto (ui.perfetto.dev, trace processor) and chrome://tracing read:
// report --format trace. Layout and its reasons: docs/analysis.md, "Timeline
// in Perfetto".
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "io/result_model.hpp"

namespace gpuscale {

// Above this many events a trace is slow to open in a browser (Perfetto's UI holds it all in memory): report
// --format trace says so on stderr, with the size, and writes it all the same.
constexpr std::size_t kTraceEventsNote = 1000000;

// The case numbers (from 1) of `--cases` text such as "1,3-5": sorted, distinct. InputError naming the text when
// it is not a list of numbers and ranges of at least 1.
std::vector<std::size_t> parse_case_numbers(const std::string& text);

// What a trace holds, by kind of event.
struct TraceCounts {
  std::size_t cases = 0;     // a slice per case and rank that ran samples
  std::size_t samples = 0;   // a slice per timed sample and rank
  std::size_t phases = 0;    // a slice per phase interval
  std::size_t counters = 0;  // a counter value per telemetry reading and quantity
  std::size_t metadata = 0;  // names and sort orders of processes and threads
  std::size_t bytes = 0;     // of the JSON written
  double earliest_s = INFINITY;  // the earliest time of any event, common clock (s)
  std::size_t events() const { return cases + samples + phases + counters + metadata; }
};

// Writes the trace event by event as the cases come (a case's events need only that case in memory). Rank r is
// the process pid r + 1 (Perfetto treats pid 0 as the kernel's idle task); each lane of a rank is a thread of its
// own, with an id unique in the trace: "cases", "samples", then one per phase name, and a further thread of a
// lane ("samples (2)") wherever two of its intervals overlap, so that no thread holds slices that partly overlap.
class TraceWriter {
 public:
  // `out` null: a dry run that counts what would be written. Times are written in microseconds after `t0_s`
  // (the earliest time, from a dry run, so that numbers stay small); `source` is the result file's path.
  TraceWriter(std::ostream* out, const RunRecord& run, std::string source, double t0_s);
  void add_case(const CaseRecord& c);
  // Ends the JSON; `cases` is what the trace holds, for its otherData.
  void finish(const std::vector<std::size_t>& cases);
  const TraceCounts& counts() const { return counts_; }

  // A thread of a rank's lane: its id and the end (ns after t0) of its last slice.
  struct LaneRow {
    std::int64_t tid = 0;
    std::int64_t end_ns = 0;
  };
  struct Lane {
    std::string name;
    std::vector<LaneRow> rows;
  };

 private:
  void emit(const std::string& event);
  void process_metadata(std::size_t rank);
  std::int64_t place(std::size_t rank, const std::string& lane, std::int64_t start_ns, std::int64_t end_ns);
  std::int64_t ns(double t_s);
  void slice(const char* cat, const std::string& name, std::int64_t pid, std::int64_t tid, std::int64_t start_ns,
             std::int64_t end_ns, const std::string& args);
  void add_case_spans(const CaseRecord& c);
  void add_samples(const CaseRecord& c);
  void add_phases(const CaseRecord& c);
  void add_telemetry(const CaseRecord& c);

  std::ostream* out_;
  RunRecord run_;  // its cases left empty
  std::string source_;
  double t0_s_;
  TraceCounts counts_;
  std::vector<std::vector<Lane>> lanes_;  // [rank]: in the order they appeared
  std::int64_t next_tid_;
  std::string buf_;
  bool first_ = true;
};

// The note report --format trace prints before it writes a trace of more than `limit` events: how big it is, and
// how to pick cases (the file holds cases 1..cases_in_file); "" at or below the limit.
std::string trace_size_note(const std::string& path, const TraceCounts& counts, std::size_t cases_in_file,
                            std::size_t limit = kTraceEventsNote);

// Microseconds as the trace writes them: `ns` to the nanosecond, and, for a timestamp, 0.1 ns more, so that a
// reader that truncates µs x 1000 to whole nanoseconds (Perfetto's trace processor does) reads exactly `ns`.
std::string trace_us(std::int64_t ns, bool timestamp);

}  // namespace gpuscale
