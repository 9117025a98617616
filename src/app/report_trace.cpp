// gpuscale report FILE --format trace -o OUT: the file's samples, phases and
// GPU readings as a timeline for Perfetto and chrome://tracing. The file is
// read twice, one case at a time: first to count the events and find the
// earliest time (the trace's zero), then to write them.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "app/commands.hpp"
#include "app/output_path.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "io/result_reader.hpp"
#include "report/render_trace.hpp"

namespace gpuscale {

namespace {

// The cases asked for (indices from 0), or all.
struct CaseFilter {
  std::vector<std::size_t> numbers;  // from 1; empty: every case
  bool has(std::size_t index) const {
    return numbers.empty() || std::binary_search(numbers.begin(), numbers.end(), index + 1);
  }
};

// What the first reading found.
struct TracePlan {
  RunRecord run;
  std::size_t cases_read = 0;
  std::vector<std::size_t> traced;  // case numbers (from 1) the trace holds
  TraceCounts counts;
};

TracePlan count_trace(const std::string& path, const CaseFilter& filter) {
  TracePlan p;
  std::unique_ptr<TraceWriter> dry;
  p.run = read_result_file(path, [&](const RunRecord& header, CaseRecord&& c) {
    ++p.cases_read;
    if (!filter.has(c.index)) return;
    if (!dry) dry = std::make_unique<TraceWriter>(nullptr, header, path, 0.0);
    dry->add_case(c);
    p.traced.push_back(c.index + 1);
  });
  if (!dry) dry = std::make_unique<TraceWriter>(nullptr, p.run, path, 0.0);
  dry->finish(p.traced);
  p.counts = dry->counts();
  return p;
}

// A case asked for that the file does not hold: one it never planned, or one the run did not reach.
void check_cases_exist(const std::string& path, const TracePlan& p, const CaseFilter& filter) {
  for (const std::size_t n : filter.numbers) {
    if (n <= p.cases_read) continue;
    const std::string held = p.cases_read == 0 ? "it holds no case" : "it holds cases 1-" + std::to_string(p.cases_read);
    if (n <= p.run.cases_planned) {
      throw InputError("--cases " + std::to_string(n) + ": case " + std::to_string(n) + " of " + path +
                       " did not run (status: " + p.run.status + "); " + held);
    }
    throw InputError("--cases " + std::to_string(n) + ": " + path + " has no case " + std::to_string(n) + "; " + held);
  }
}

void write_trace(std::ostream& out, const std::string& path, const TracePlan& p, const CaseFilter& filter) {
  const double t0 = std::isfinite(p.counts.earliest_s) ? p.counts.earliest_s : 0.0;
  std::unique_ptr<TraceWriter> w;
  const RunRecord run = read_result_file(path, [&](const RunRecord& header, CaseRecord&& c) {
    if (c.index >= p.cases_read || !filter.has(c.index)) return;  // a live file may have grown since
    if (!w) w = std::make_unique<TraceWriter>(&out, header, path, t0);
    w->add_case(c);
  });
  if (!w) w = std::make_unique<TraceWriter>(&out, run, path, t0);
  w->finish(p.traced);
  out.flush();
}

std::string summary(const std::string& out, const TracePlan& p) {
  const TraceCounts& c = p.counts;
  return out + ": " + std::to_string(c.events()) + " events of " + std::to_string(p.traced.size()) + " case(s) on " +
         std::to_string(p.run.ranks.size()) + " rank(s): " + std::to_string(c.samples) + " sample and " +
         std::to_string(c.phases) + " phase slices, " + std::to_string(c.counters) + " GPU readings; " +
         (c.bytes < 1000000 ? format_number("%.0f kB", static_cast<double>(c.bytes) / 1e3)
                            : format_number("%.1f MB", static_cast<double>(c.bytes) / 1e6)) +
         ". Open it in ui.perfetto.dev (Open trace file) or chrome://tracing";
}

}  // namespace

int cmd_report_trace(const ReportOptions& opt) {
  const std::string& path = opt.files.at(0);
  CaseFilter filter;
  if (!opt.cases.empty()) filter.numbers = parse_case_numbers(opt.cases);
  std::unique_ptr<FileBeside> file;  // made before the reading: a mistake in -o costs no time
  if (opt.output != "-") file = std::make_unique<FileBeside>(check_output(opt.output, opt.force, {path}));
  const TracePlan p = count_trace(path, filter);
  check_cases_exist(path, p, filter);
  if (p.counts.samples == 0) {
    std::fprintf(stderr, "%s", wrap("note: " + path + ": no case traced has samples (a skipped case has none, "
                                    "and a run that ended early may have no case): the trace holds no slices").c_str());
  }
  const std::string note = trace_size_note(path, p.counts, p.cases_read);
  if (!note.empty()) std::fprintf(stderr, "%s", wrap(note).c_str());
  if (!file) {
    write_trace(std::cout, path, p, filter);
    return kExitOk;
  }
  write_trace(file->stream(), path, p, filter);
  file->commit();
  std::cout << wrap(summary(file->where(), p)) << std::flush;
  return kExitOk;
}

}  // namespace gpuscale
