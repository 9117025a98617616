// The notes under the report's table: a note many cases share reads once, with its count, its cases and the range
// of its numbers (report/report_notes.hpp); and the cold flag, from known samples.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <tuple>

#include "report/report.hpp"
#include "report/report_notes.hpp"

using namespace gpuscale;

namespace {

// A case of one rank whose timed samples took `device` seconds each, one after another.
CaseRecord one_rank(std::size_t index, const std::vector<double>& device) {
  CaseRecord c;
  c.index = index;
  c.experiment = "g";
  c.workload = "gemm";
  c.mode = Mode::parallel;
  c.backend = Backend::cpu;
  c.status = CaseStatus::ok;
  c.ranks = 1;
  c.reps = static_cast<int>(device.size());
  c.params.set("size", std::int64_t{100 + static_cast<std::int64_t>(index)});
  c.flops_per_sample = 2e6;
  for (std::size_t i = 0; i < device.size(); ++i) {
    c.device_time_s.push_back(device[i]);
    c.enqueue_s.push_back(1e-6);
    c.wall_start_s.push_back(10.0 * static_cast<double>(i));
    c.wall_end_s.push_back(10.0 * static_cast<double>(i) + device[i]);
  }
  c.verify_error.assign(1, 0.0);
  return c;
}

// The flags of a one-rank case with these samples.
std::vector<std::string> flags_of(const std::vector<double>& device) {
  RunRecord run;
  return report_row(run, one_rank(0, device)).flags;
}

const std::vector<std::pair<std::string, std::size_t>> kOne{{"sweep", 24}};
const std::vector<std::pair<std::string, std::size_t>> kTwo{{"lat", 12}, {"bw", 12}};

}  // namespace

TEST_CASE("a case is cold only where its first sample exceeds the median by more than the ratio, the samples' spread "
          "and 10 us", "[notes]") {
  // 2 ms over a median of 1 ms: twice it, 1 ms more, where the other samples lie within 0.02 ms of each other.
  const auto cold = flags_of({2e-3, 1e-3, 1e-3, 1.01e-3, 0.99e-3});
  REQUIRE(cold.size() == 1);
  CHECK(cold[0] == "cold: the first timed sample took 2.00x the median, 1.00 ms more, on rank 0 (more warm-up: "
                   "warmup_s)");
  // 1.2x the median: under kColdStartRatio, however far above the spread and the floor.
  CHECK(flags_of({1.2e-3, 1e-3, 1e-3, 1e-3, 1e-3}).empty());
  // 1.33x and 1 ms over the median, but the other samples spread over 2 ms (1 and 3 ms): noise could give it.
  CHECK(flags_of({4e-3, 1e-3, 3e-3, 1e-3, 3e-3}).empty());
  // 3x the median of a 1 us operation, but only 2 us more: under the 10 us floor.
  CHECK(flags_of({3e-6, 1e-6, 1e-6, 1e-6, 1e-6}).empty());
  // The same shape 11 us over: cold.
  CHECK(flags_of({12e-6, 1e-6, 1e-6, 1e-6, 1e-6}).size() == 1);
  // Too few samples to tell: none.
  CHECK(flags_of({2e-3, 1e-3}).empty());
}

TEST_CASE("case numbers read as a short list, runs of three or more as ranges", "[notes]") {
  CHECK(case_list({13, 3, 4, 5, 6, 9, 12}) == "3-6, 9, 12, 13");
  CHECK(case_list({2}) == "2");
  CHECK(case_list({7, 7, 8}) == "7, 8");
  CHECK(case_list({}).empty());
}

TEST_CASE("the same flag of several cases reads once, with its count, its cases and the range of its numbers",
          "[notes]") {
  ReportNotes notes(kOne, true);
  notes.add("memcpy on the CPU backend");
  for (std::size_t c : {3, 4, 5, 9}) {
    notes.add_flag("sweep", c, "cold: the first timed sample took 1." + std::to_string(c) + "0x the median, " +
                                   std::to_string(c) + "0 us more, on rank 1 (more warm-up: warmup_s)");
  }
  notes.add_flag("sweep", 5, "host busy: others used 40% of node 0's 2 CPUs (load 2.3)");
  notes.add("memcpy on the CPU backend");  // said once
  CHECK(notes.lines() == std::vector<std::string>{
                             "memcpy on the CPU backend",
                             "cold in 4 of 24 cases (3-5, 9): the first timed sample took 1.30-1.90x the median, "
                             "30-90 us more, on rank 1 (more warm-up: warmup_s)",
                             "case 5: host busy: others used 40% of node 0's 2 CPUs (load 2.3)"});
}

TEST_CASE("a range of ranks reads as ranks, one rank stays a rank", "[notes]") {
  ReportNotes notes({{"sweep", 24}, {"other", 2}}, true);
  // Per case: its experiment, the rank that waited and for how much of the time (%).
  const std::tuple<const char*, std::size_t, int, int> waits[] = {
      {"sweep", 1, 0, 49}, {"sweep", 2, 1, 51}, {"other", 3, 1, 50}, {"other", 4, 1, 52}};
  for (const auto& [experiment, case_number, rank, share] : waits) {
    notes.add_flag(experiment, case_number, "descheduled: rank " + std::to_string(rank) + " waited for a CPU " +
                                                std::to_string(share) + "% of the time it was ready to run");
  }
  CHECK(notes.lines() == std::vector<std::string>{
                             "descheduled in 2 of 24 cases of sweep (1, 2): ranks 0-1 waited for a CPU 49-51% of the "
                             "time it was ready to run",
                             "descheduled in 2 of 2 cases of other (3, 4): rank 1 waited for a CPU 50-52% of the "
                             "time it was ready to run"});
}

TEST_CASE("notes that say different things stay apart, times range over their units", "[notes]") {
  ReportNotes notes(kOne, true);
  notes.add_flag("sweep", 1, "straggler: rank 1 on a (node 0, local rank 1, H100): median 1.50x the others'");
  notes.add_flag("sweep", 2, "straggler: rank 1 on b (node 1, local rank 1, H100): median 2.00x the others'");
  notes.add_flag("sweep", 3, "straggler: rank 1 on a (node 0, local rank 1, H100): median 1.70x the others'");
  notes.add_flag("sweep", 4, "clock: ranks' offsets are uncertain by up to 450 us");
  notes.add_flag("sweep", 6, "clock: ranks' offsets are uncertain by up to 1.20 ms");
  CHECK(notes.lines() == std::vector<std::string>{
                             "straggler in 2 of 24 cases (1, 3): rank 1 on a (node 0, local rank 1, H100): median "
                             "1.50-1.70x the others'",
                             "case 2: straggler: rank 1 on b (node 1, local rank 1, H100): median 2.00x the others'",
                             "clock in 2 of 24 cases (4, 6): ranks' offsets are uncertain by up to 450 us-1.20 ms"});
}

TEST_CASE("a case with two notes of one shape counts once in each of two groups", "[notes]") {
  ReportNotes notes(kOne, true);
  for (std::size_t c : {1, 2}) {
    notes.add_flag("sweep", c, "straggler: rank 1: median 2.00x the others'");
    notes.add_flag("sweep", c, "straggler: rank 2: median 3.00x the others'");
  }
  CHECK(notes.lines() == std::vector<std::string>{
                             "straggler in 2 of 24 cases (1, 2): rank 1: median 2.00x the others'",
                             "straggler in 2 of 24 cases (1, 2): rank 2: median 3.00x the others'"});
}

TEST_CASE("a skip reason reads once for all experiments, a range of one experiment names it", "[notes]") {
  const std::string why = "scope inter-node needs ranks on at least 2 nodes; this job runs on 1 node";
  ReportNotes notes(kTwo, true);
  for (std::size_t c = 1; c <= 24; ++c) {
    const std::string experiment = c <= 12 ? "lat" : "bw";
    if (c % 2 == 0) notes.add_case(experiment, c, "skipped", why, CaseNoteForm::kind_first);
    if (c == 13 || c == 15) notes.add_flag(experiment, c, "descheduled: rank 0 waited for a CPU " +
                                                               std::to_string(c + 20) + "% of the time");
  }
  CHECK(notes.lines() == std::vector<std::string>{
                             "skipped in 12 of 24 cases (2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24): " + why,
                             "descheduled in 2 of 12 cases of bw (13, 15): rank 0 waited for a CPU 33-35% of the "
                             "time"});
  // One case alone reads as it always did.
  ReportNotes one(kTwo, true);
  one.add_case("bw", 14, "skipped", why, CaseNoteForm::kind_first);
  CHECK(one.lines() == std::vector<std::string>{"skipped: case 14: " + why});
}

TEST_CASE("a list of cases too long to read is left out, not grouped, each case's note is a line", "[notes]") {
  ReportNotes many({{"sweep", 200}}, true);
  ReportNotes each({{"sweep", 200}}, false);
  for (std::size_t c = 1; c <= 200; c += 3) {
    for (ReportNotes* n : {&many, &each}) n->add_flag("sweep", c, "host busy: others used 50% of node 0's 2 CPUs");
  }
  CHECK(many.lines() == std::vector<std::string>{"host busy in 67 of 200 cases: others used 50% of node 0's 2 CPUs"});
  const auto lines = each.lines();
  REQUIRE(lines.size() == 67);
  CHECK(lines[1] == "case 4: host busy: others used 50% of node 0's 2 CPUs");
}

TEST_CASE("the table groups the cold flags of an experiment, JSON keeps each row's own", "[notes]") {
  RunRecord run;
  for (std::size_t i = 0; i < 3; ++i) {
    const double first = 1e-3 * (1.5 + static_cast<double>(i) * 0.75);  // 1.5, 2.25 and 3 times the median
    run.cases.push_back(one_rank(i, {first, 1e-3, 1e-3, 1e-3, 1e-3}));
  }
  const auto rows = build_report(run);
  const std::string table = render_table("f.h5", run, rows);
  INFO(table);
  CHECK(table.find("note: cold in 3 of 3 cases (1-3): the first timed sample took 1.50-3.00x the\n"
                   "  median, 500 us-2.00 ms more, on rank 0 (more warm-up: warmup_s)\n") != std::string::npos);
  CHECK(table.find("note: case") == std::string::npos);
  const std::string wide = render_table("f.h5", run, rows, true);  // every column, and every case's note
  CHECK(wide.find("note: case 2: cold: the first timed sample took 2.25x the median, 1.25 ms more, on rank 0") !=
        std::string::npos);
  const auto json = nlohmann::json::parse(render_json(rows));
  for (std::size_t i = 0; i < 3; ++i) CHECK(json[i]["flags"][0] == rows[i].flags[0]);
  CHECK(json[1]["flags"][0] == "cold: the first timed sample took 2.25x the median, 1.25 ms more, on rank 0 (more "
                               "warm-up: warmup_s)");
}
