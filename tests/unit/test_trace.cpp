// report --format trace (report/render_trace.hpp) on a case with known timings: one slice per sample, phase
// interval and rank's case, at the microsecond values the timings give; pid rank + 1, a thread per lane, named;
// overlapping intervals of a lane on threads of their own; GPU readings as counters; the --cases list and the
// size note.
#include <catch2/catch.hpp>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/case_tables.hpp"
#include "core/error.hpp"
#include "report/render_trace.hpp"

using namespace gpuscale;

namespace {

RunRecord two_ranks() {
  RunRecord run;
  run.software_version = "0.1.0";
  run.backend = Backend::cpu;
  run.status = "complete";
  run.complete = true;
  for (int r = 0; r < 2; ++r) {
    RankRecord k;
    k.hostname = "h" + std::to_string(r);
    k.local_rank = r;
    run.ranks.push_back(k);
  }
  return run;
}

// Case 3 (index 2): 2 ranks x 3 samples, sample i of rank r from 10 + i + r/1000 s for 0.5 s (device 0.4 s).
CaseRecord known_case() {
  CaseRecord c;
  c.index = 2;
  c.experiment = "pipe";
  c.workload = "pipeline";
  c.mode = Mode::parallel;
  c.backend = Backend::cpu;
  c.status = CaseStatus::ok;
  c.ranks = 2;
  c.reps = 3;
  c.params.set("size", std::int64_t{512});
  c.params.set("dtype", std::string("fp64"));
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < 3; ++i) {
      c.wall_start_s.push_back(10.0 + i + r * 1e-3);
      c.wall_end_s.push_back(10.5 + i + r * 1e-3);
      c.device_time_s.push_back(0.4);
      c.enqueue_s.push_back(0.001);
    }
  }
  c.verify_error.assign(2, 0.0);
  c.warmup_samples = {1, 2};
  // Each sample: compute 0-0.3 s, transfer 0.2-0.45 s (overlapping compute: another lane); on rank 1 a second
  // transfer 0.25-0.4 s overlaps the first: a second thread of the transfer lane.
  testing::PhaseRows rows;
  rows.names = {"compute", "transfer"};
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < 3; ++i) {
      const double t0 = 10.0 + i + r * 1e-3;
      rows.add(r, i, 0, t0, t0 + 0.3);
      rows.add(r, i, 1, t0 + 0.2, t0 + 0.45);
      if (r == 1) rows.add(r, i, 1, t0 + 0.25, t0 + 0.4);
    }
  }
  c.tables.push_back(testing::phases_table_of(rows, 2));
  // Rank 0's GPU read twice, power not readable the second time; rank 1 not read.
  TelemetrySample a{9.5, 1980, 2619, 40, 300, 0}, b{12.0, 1755, 2619, 55, NAN, -1};
  c.tables.push_back(testing::telemetry_table_of({{a, b}, {}}, 0.05));
  return c;
}

nlohmann::json trace_of(const RunRecord& run, const CaseRecord& c, double t0, TraceCounts* counts = nullptr) {
  std::ostringstream out;
  TraceWriter w(&out, run, "x.h5", t0);
  w.add_case(c);
  w.finish({c.index + 1});
  if (counts) *counts = w.counts();
  REQUIRE(out.str().size() == w.counts().bytes);
  return nlohmann::json::parse(out.str());
}

std::vector<nlohmann::json> of_phase(const nlohmann::json& t, const std::string& ph, const std::string& cat = "") {
  std::vector<nlohmann::json> out;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] == ph && (cat.empty() || e.value("cat", "") == cat)) out.push_back(e);
  }
  return out;
}

// As Perfetto's trace processor reads a time: microseconds x 1000, truncated to whole nanoseconds.
std::int64_t tp_ns(const nlohmann::json& v) { return static_cast<std::int64_t>(v.get<double>() * 1000.0); }

// (pid, tid) -> thread name.
std::map<std::pair<int, int>, std::string> thread_names(const nlohmann::json& t) {
  std::map<std::pair<int, int>, std::string> out;
  for (const auto& e : of_phase(t, "M")) {
    if (e["name"] == "thread_name") out[{e["pid"].get<int>(), e["tid"].get<int>()}] = e["args"]["name"];
  }
  return out;
}

}  // namespace

TEST_CASE("a trace has one slice per sample, phase interval and rank's case, at the times the file gives",
          "[trace]") {
  const RunRecord run = two_ranks();
  const CaseRecord c = known_case();
  TraceCounts counts;
  const auto t = trace_of(run, c, 9.5, &counts);
  CHECK(t["displayTimeUnit"] == "ms");
  CHECK(t["otherData"]["t0_s"] == 9.5);
  CHECK(t["traceEvents"].size() == counts.events());
  CHECK(counts.cases == 2);
  CHECK(counts.samples == 6);
  CHECK(counts.phases == 15);  // 2 per sample, and rank 1's second transfer
  CHECK(of_phase(t, "X").size() == 23);
  CHECK(of_phase(t, "X", "sample").size() == 6);
  CHECK(of_phase(t, "X", "phase").size() == 15);
  CHECK(counts.earliest_s == 9.5);  // the first GPU reading

  for (const auto& e : of_phase(t, "X", "sample")) {
    const int r = e["args"]["rank"], i = e["args"]["sample"];
    CHECK(e["pid"] == r + 1);
    CHECK(e["name"] == "case 3 sample " + std::to_string(i));
    CHECK(e["args"]["case"] == 3);
    CHECK(e["args"]["device_time_us"].get<double>() == Approx(4e5));
    // 0.5 s after t0, plus i s, plus r ms: exact to the nanosecond as Perfetto reads it.
    CHECK(tp_ns(e["ts"]) == 500000000LL + i * 1000000000LL + r * 1000000LL);
    CHECK(e["dur"].get<double>() == Approx(5e5).margin(1e-3));
    CHECK(std::llabs(tp_ns(e["dur"]) - 500000000LL) <= 1);
  }
  const auto cases = of_phase(t, "X", "case");
  REQUIRE(cases.size() == 2);
  for (const auto& e : cases) {
    const int r = e["args"]["rank"];
    CHECK(e["name"] == "case 3 pipe [parallel]");
    CHECK(tp_ns(e["ts"]) == 500000000LL + r * 1000000LL);
    CHECK(std::llabs(tp_ns(e["dur"]) - 2500000000LL) <= 1);
    CHECK(e["args"]["params"] == nlohmann::json{{"size", 512}, {"dtype", "fp64"}});
    CHECK(e["args"]["warmup_samples"] == r + 1);
    CHECK(e["args"]["mode"] == "parallel");  // enums by their names, as the file writes them
    CHECK(e["args"]["status"] == "ok");
  }
}

TEST_CASE("a trace names its processes by rank and host, and its threads by lane, no thread's slices overlap",
          "[trace]") {
  const auto t = trace_of(two_ranks(), known_case(), 9.5);
  std::map<int, std::string> processes;
  std::map<int, int> sort_index;
  for (const auto& e : of_phase(t, "M")) {
    if (e["name"] == "process_name") processes[e["pid"]] = e["args"]["name"];
    if (e["name"] == "process_sort_index") sort_index[e["pid"]] = e["args"]["sort_index"];
  }
  CHECK(processes == std::map<int, std::string>{{1, "rank 0 (host h0, local rank 0)"},
                                                {2, "rank 1 (host h1, local rank 1)"}});
  CHECK(sort_index == std::map<int, int>{{1, 0}, {2, 1}});

  const auto names = thread_names(t);
  std::multiset<std::string> per_rank[2];
  std::set<int> tids;
  for (const auto& [ids, name] : names) {
    per_rank[ids.first - 1].insert(name);
    CHECK(tids.insert(ids.second).second);  // a thread id is the trace's, not only its process's
    CHECK(ids.second > 2);                  // and never a pid
  }
  CHECK(per_rank[0] == std::multiset<std::string>{"cases", "samples", "phase compute", "phase transfer"});
  CHECK(per_rank[1] ==
        std::multiset<std::string>{"cases", "samples", "phase compute", "phase transfer", "phase transfer (2)"});

  // Every slice sits on a thread of its lane, and on no thread does a slice start before the previous one ended.
  std::map<std::pair<int, int>, std::vector<std::pair<std::int64_t, std::int64_t>>> spans;
  for (const auto& e : of_phase(t, "X")) {
    const std::pair<int, int> ids{e["pid"], e["tid"]};
    REQUIRE(names.count(ids) == 1);
    const std::string lane = e["cat"] == "case" ? "cases" : e["cat"] == "sample" ? "samples" : "phase " +
                             e["name"].get<std::string>();
    CHECK(names.at(ids).rfind(lane, 0) == 0);
    spans[ids].push_back({tp_ns(e["ts"]), tp_ns(e["ts"]) + tp_ns(e["dur"])});
  }
  for (auto& [ids, s] : spans) {
    std::sort(s.begin(), s.end());
    for (std::size_t i = 1; i < s.size(); ++i) CHECK(s[i].first >= s[i - 1].second);
  }
}

TEST_CASE("GPU readings are counters of their rank, without the values that were not readable", "[trace]") {
  TraceCounts counts;
  const auto t = trace_of(two_ranks(), known_case(), 9.5, &counts);
  std::map<std::string, std::vector<double>> values;
  for (const auto& e : of_phase(t, "C")) {
    CHECK(e["pid"] == 1);
    values[e["name"]].push_back(e["args"]["value"]);
  }
  CHECK(counts.counters == 8);  // 5 of the first reading, 3 of the second (power NaN, reasons -1)
  CHECK(values["sm_clock (MHz)"] == std::vector<double>{1980, 1755});
  CHECK(values["power (W)"] == std::vector<double>{300});
  CHECK(values["clock_event_reasons"] == std::vector<double>{0});
  const auto first = of_phase(t, "C").front();
  CHECK(tp_ns(first["ts"]) == 0);
}

TEST_CASE("a dry run counts what the trace holds, the size note names the size and --cases", "[trace]") {
  const RunRecord run = two_ranks();
  const CaseRecord c = known_case();
  TraceWriter dry(nullptr, run, "x.h5", 9.5);
  dry.add_case(c);
  dry.finish({3});
  TraceCounts written;
  trace_of(run, c, 9.5, &written);
  CHECK(dry.counts().events() == written.events());
  CHECK(dry.counts().bytes == written.bytes);

  CHECK(trace_size_note("x.h5", written, 4).empty());
  const std::string note = trace_size_note("x.h5", written, 4, 10);
  CHECK_THAT(note, Catch::Contains("holds " + std::to_string(written.events()) + " events"));
  CHECK_THAT(note, Catch::Contains("--cases"));
  CHECK_THAT(note, Catch::Contains("above 10 events"));
}

TEST_CASE("a trace takes --cases as case numbers and ranges from 1", "[trace]") {
  CHECK(parse_case_numbers("2") == std::vector<std::size_t>{2});
  CHECK(parse_case_numbers("1,3-5") == std::vector<std::size_t>{1, 3, 4, 5});
  CHECK(parse_case_numbers("5,1,1-2") == std::vector<std::size_t>{1, 2, 5});
  for (const char* bad : {"", "0", "a", "1,,2", "2-", "-2", "1.5", "3-2", "99999999999"}) {
    CHECK_THROWS_AS(parse_case_numbers(bad), InputError);
  }
  CHECK_THROWS_WITH(parse_case_numbers("3-2"), Catch::Contains("runs backwards"));
  CHECK_THROWS_WITH(parse_case_numbers("x"), Catch::Contains("e.g. --cases 1,3-5"));
  // Counted before any number is made: 13000 ranges of a million each would take 100 GB.
  std::string many;
  for (int i = 0; i < 13000; ++i) many += std::string(i ? "," : "") + "1-1000000";
  CHECK_THROWS_WITH(parse_case_numbers(many), "--cases: the list names more than 1000000 cases in all (a file holds "
                                              "far fewer); give the cases once each");
  std::string ones;
  for (int i = 0; i < 100; ++i) ones += "1,";
  CHECK_THROWS_WITH(parse_case_numbers(ones + "x"), "--cases " + ones.substr(0, 57) + "...: expected case numbers "
                                                    "(from 1) and ranges, e.g. --cases 1,3-5");
  CHECK_THROWS_WITH(parse_case_numbers("1-1000001"), "--cases 1-1000001: the range 1-1000001 holds too many cases");
  CHECK(parse_case_numbers("1-1000000").size() == 1000000);
}

TEST_CASE("times are written to the nanosecond, as Perfetto reads them", "[trace]") {
  CHECK(trace_us(0, true) == "0.0001");
  CHECK(trace_us(1234567, true) == "1234.5671");
  CHECK(trace_us(1234567, false) == "1234.567");
  for (std::int64_t ns : {1LL, 999LL, 4350LL, 1234567LL, 86399999999999LL}) {
    CHECK(static_cast<std::int64_t>(std::stod(trace_us(ns, true)) * 1000.0) == ns);
  }
}
