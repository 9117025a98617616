// The report's rows: statistics per case and speedup for serial/parallel pairs.
#include <catch2/catch.hpp>

#include <cmath>
#include <nlohmann/json.hpp>
#include <tuple>

#include "app/rank_table.hpp"
#include "common/case_tables.hpp"
#include "core/text.hpp"
#include "report/analysis.hpp"
#include "report/baseline.hpp"
#include "report/expectations.hpp"
#include "report/report.hpp"
#include "report/side_by_side.hpp"
#include "report/terminal_text.hpp"

using namespace gpuscale;

namespace {
// A case whose every rank takes `each` seconds per sample, laid out serially or in parallel.
CaseRecord timed_case(std::size_t index, const std::string& mode, int ranks, int reps, double each) {
  CaseRecord c;
  c.index = index;
  c.experiment = "g";
  c.workload = "gemm";
  c.mode = *parse_mode(mode);
  c.backend = Backend::cpu;
  c.status = CaseStatus::ok;
  c.ranks = ranks;
  c.reps = reps;
  c.params.set("reps", std::int64_t{reps});
  c.params.set("size", std::int64_t{100});
  c.flops_per_sample = 2e6;
  for (int r = 0; r < ranks; ++r) {
    for (int i = 0; i < reps; ++i) {
      const double slow = (r == ranks - 1) ? 1.5 : 1.0;  // the last rank is the straggler
      const double t0 = mode == "serial" ? (r * reps + i) * 10.0 : i * 10.0;
      c.device_time_s.push_back(each * slow);
      c.enqueue_s.push_back(each / 10);
      c.wall_start_s.push_back(t0);
      c.wall_end_s.push_back(t0 + each * slow);
    }
  }
  c.verify_error.assign(ranks, 0.0);
  return c;
}
// The report under straggler threshold `threshold`.
std::vector<ReportRow> report_with_stragglers_over(const RunRecord& run, double threshold) {
  RowSettings s;
  s.straggler_threshold = threshold;
  return build_report(run, s);
}
// The report without its straggler lines: timed_case's last rank is 1.5x the others on purpose.
std::vector<ReportRow> report_no_stragglers(const RunRecord& run) { return report_with_stragglers_over(run, 1.0); }
}  // namespace

TEST_CASE("two ranks in parallel finish in about half the serial time", "[report]") {
  RunRecord run;
  run.cases = {timed_case(0, "serial", 2, 5, 0.1), timed_case(1, "parallel", 2, 5, 0.1)};
  const auto rows = build_report(run);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].median_s == Approx(0.25));  // 0.1 + 0.15, one after another
  CHECK_FALSE(rows[0].speedup);
  CHECK(rows[1].median_s == Approx(0.15));  // makespan: the straggler's time
  REQUIRE(rows[1].speedup);
  CHECK(*rows[1].speedup == Approx(0.25 / 0.15));
  CHECK(*rows[1].efficiency == Approx(0.25 / 0.15 / 2));
  CHECK(rows[1].slowest_rank == 1);
  CHECK(rows[1].slowest_ratio == Approx(0.15 / 0.1));  // over the median of the other ranks', as a straggler's
  REQUIRE(rows[1].gflops);
  CHECK(*rows[1].gflops == Approx(2e6 / 0.125 / 1e9));  // median of the pooled device times
  CHECK(rows[0].params_label == "size=100");
}

TEST_CASE("a case whose cross-node times are unsure by more than 5% of its samples is flagged", "[report][clock]") {
  RunRecord run;
  run.cases = {timed_case(0, "parallel", 2, 5, 1e-3)};  // makespans of 1.5 ms
  run.ranks.resize(2);
  run.ranks[0].clock_shared = true;
  run.ranks[1].clock_uncertainty_start_s = 70e-6;  // 0 + 70 us: 4.7% of 1.5 ms
  CHECK(report_no_stragglers(run)[0].flags.empty());
  run.ranks[1].clock_uncertainty_applied_s = 80e-6;  // the estimate the times are on: 5.3%
  const auto flags = report_no_stragglers(run)[0].flags;
  REQUIRE(flags.size() == 1);
  CHECK(flags[0] == "clock: ranks' offsets are uncertain by up to 80.0 us, 5% of the median sample (cross-node times "
                    "are that unsure)");
}

TEST_CASE("runs side by side: each case's median per file, speedup over the first file's serial run",
          "[report][compare]") {
  RunRecord one, two;
  one.cases = {timed_case(0, "serial", 2, 5, 0.1), timed_case(1, "parallel", 2, 5, 0.1)};
  two.cases = {timed_case(0, "serial", 4, 5, 0.1), timed_case(1, "parallel", 4, 5, 0.1)};
  two.cases[1].wall_end_s.assign(two.cases[1].wall_end_s.size(), 0.0);
  for (std::size_t i = 0; i < two.cases[1].wall_end_s.size(); ++i) {  // across servers: 0.5 s a sample
    two.cases[1].wall_end_s[i] = two.cases[1].wall_start_s[i] + 0.5;
  }
  const std::vector<RunRows> runs{{"one.h5", 2, 1, build_report(one)}, {"two.h5", 4, 2, build_report(two)}};
  const std::string t = render_side_by_side(runs);
  INFO(t);
  CHECK(t.find("[1] one.h5: 2 rank(s) on 1 node(s)\n[2] two.h5: 4 rank(s) on 2 node(s)\n") != std::string::npos);
  // One rank's sample in [1]'s serial run: (0.1 + 0.15) / 2 turns = 0.125 s. Parallel: 2 ranks in 0.15 s on one
  // server (2 x 0.125 / 0.15 = 1.67x, 83%), 4 ranks in 0.5 s across two (4 x 0.125 / 0.5 = 1.00x, 25%).
  CHECK(t.find("\ng: size=100\nmode      [1] 2r/1n         [2] 4r/2n\n") != std::string::npos);
  CHECK(t.find("\nserial    250 ms            450 ms\n") != std::string::npos);
  CHECK(t.find("\nparallel  150 ms 1.67x 83%  500 ms 1.00x 25%\n") != std::string::npos);
  CHECK(render_side_by_side({runs[0]}).empty());  // one file: nothing to compare
  RunRecord other;
  other.cases = {timed_case(0, "serial", 2, 5, 0.1)};
  other.cases[0].params.set("size", std::int64_t{7});
  CHECK(render_side_by_side({runs[0], {"other.h5", 2, 1, build_report(other)}}).empty());  // no case in common
  CHECK(t.find("!: the host made") == std::string::npos);  // nothing doubtful: no mark, no legend
}

TEST_CASE("runs side by side: a number the host made doubtful is marked, with a legend", "[report][compare]") {
  RunRecord one, two;
  one.cases = {timed_case(0, "serial", 2, 5, 0.1), timed_case(1, "parallel", 2, 5, 0.1)};
  two.cases = one.cases;
  std::vector<ReportRow> busy = build_report(two);
  busy[0].host.busy = "others used 60% of node 0's 2 CPUs";
  busy[1].host.descheduled = "rank 1 waited for a CPU 41% of the time it was ready to run";
  busy[1].host.oversubscribed = "4 ranks on 2 cores of node 0";
  const std::string t = render_side_by_side({{"one.h5", 2, 1, build_report(one)}, {"busy.h5", 2, 1, busy}});
  INFO(t);
  CHECK(t.find("\nserial    250 ms            250 ms !b\n") != std::string::npos);
  CHECK(t.find("\nparallel  150 ms 1.67x 83%  150 ms 1.67x 83% !do\n") != std::string::npos);
  CHECK(t.find("!: the host made that number doubtful: b host busy, d descheduled, o\n  oversubscribed") !=
        std::string::npos);
}

TEST_CASE("the status column carries the host's mark, with a legend, in the default table and --wide",
          "[report][compare]") {
  RunRecord run;
  run.cases = {timed_case(0, "serial", 2, 5, 0.1), timed_case(1, "parallel", 2, 5, 0.1)};
  std::vector<ReportRow> rows = build_report(run);
  CHECK(render_table("f.h5", run, rows).find("status !:") == std::string::npos);  // nothing doubtful: no legend
  rows[1].host.descheduled = "rank 1 waited for a CPU 41% of the time it was ready to run";
  rows[1].host.oversubscribed = "4 ranks on 2 cores of node 0";
  for (const bool wide : {false, true}) {
    const std::string t = render_table("f.h5", run, rows, wide);
    INFO(t);
    CHECK(t.find(" ok\n") != std::string::npos);  // case 1: quiet
    CHECK(t.find(" ok !do\n") != std::string::npos);
    std::string flat = t;  // the legend's lines joined
    for (std::size_t at; (at = flat.find("\n  ")) != std::string::npos;) flat.replace(at, 3, " ");
    CHECK(flat.find("status !: the host made the case's numbers doubtful: b host busy, d descheduled, o "
                    "oversubscribed (the notes say how).") != std::string::npos);
  }
}

TEST_CASE("cases with different parameters are not paired", "[report]") {
  RunRecord run;
  CaseRecord s = timed_case(0, "serial", 2, 3, 0.1);
  CaseRecord p = timed_case(1, "parallel", 2, 3, 0.1);
  p.params.set("size", std::int64_t{200});
  run.cases = {s, p};
  CHECK_FALSE(build_report(run)[1].speedup);
}

TEST_CASE("json rows carry numbers as numbers and the documented keys", "[report]") {
  RunRecord run;
  run.cases = {timed_case(0, "serial", 2, 3, 0.1), timed_case(1, "parallel", 2, 3, 0.1)};
  const auto j = nlohmann::json::parse(render_json(build_report(run)));
  REQUIRE(j.is_array());
  REQUIRE(j.size() == 2);
  for (const char* k : {"name", "workload", "mode", "ranks", "nodes", "median_s", "min_s", "p95_s", "gflops"}) {
    CHECK(j[0].contains(k));
  }
  CHECK(j[0]["median_s"].is_number());
  CHECK(j[0]["mode"] == "serial");  // enums by their names, as the file writes them
  CHECK(j[1]["mode"] == "parallel");
  CHECK(j[0]["status"] == "ok");
  CHECK_FALSE(j[0].contains("speedup"));
  CHECK(j[1]["speedup"].is_number());
  CHECK(j[1]["efficiency"].is_number());
  CHECK(j[1]["params"]["size"] == 100);
}

TEST_CASE("csv has a header and one line per row", "[report]") {
  RunRecord run;
  run.cases = {timed_case(0, "serial", 1, 3, 0.1)};
  const std::string csv = render_csv(build_report(run));
  CHECK(csv.rfind("file,case,name,workload,mode,", 0) == 0);
  CHECK(csv.find(",enqueue_median_s,gflops,total_gflops,gbps,total_gbps,speedup,") != std::string::npos);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 2);
}

TEST_CASE("times are printed in readable units", "[report]") {
  // Three significant digits always, trailing zeros kept, in the unit that keeps a digit before the point.
  CHECK(format_seconds(1.5) == "1.50 s");
  CHECK(format_seconds(1.0) == "1.00 s");
  CHECK(format_seconds(0.0123) == "12.3 ms");
  CHECK(format_seconds(0.08) == "80.0 ms");
  CHECK(format_seconds(0.9996) == "1.00 s");
  CHECK(format_seconds(0.12345) == "123 ms");
  CHECK(format_seconds(4.56e-5) == "45.6 us");
  CHECK(format_seconds(5.23e-7) == "0.523 us");
  CHECK(format_seconds(1234.0) == "1234 s");
  CHECK(format_sig3(999.6) == "1000");
  CHECK(format_sig3(9.996) == "10.0");
  CHECK(format_sig3(0.0012345) == "0.00123");
  CHECK(format_sig3(0) == "0.00");
  CHECK(format_duration(8.54) == "8.5 s");
  CHECK(format_duration(42.4) == "42 s");
  CHECK(format_duration(200.7) == "3 min 20 s");
  CHECK(format_duration(7500) == "2 h 05 min");
  CHECK(format_duration(-1) == "0.0 s");
  CHECK_THROWS(parse_report_format("xml"));
}

TEST_CASE("bandwidth workloads report GB/s instead of GFLOP/s", "[report]") {
  RunRecord run;
  CaseRecord c = timed_case(0, "parallel", 2, 3, 0.5);
  c.workload = "copy";
  c.flops_per_sample = 0;
  c.bytes_per_sample = 1e9;
  c.note = "memcpy";
  run.cases = {c};
  const auto rows = build_report(run);
  CHECK_FALSE(rows[0].gflops);
  REQUIRE(rows[0].gbps);
  // Median of the pooled device times: 0.5 s (rank 0) and 0.75 s (rank 1, the straggler).
  CHECK(*rows[0].gbps == Approx(1e9 / 0.625 / 1e9));
  CHECK(rows[0].enqueue_median_s == Approx(0.05));
  const std::string table = render_table("f.h5", run, rows);
  CHECK(table.find("GB/s") != std::string::npos);
  CHECK(table.find("note: memcpy") != std::string::npos);
}

TEST_CASE("two ranks of one node on one GPU are refused, other nodes or CPUs are fine", "[ranks]") {
  std::vector<RankRecord> t(3);
  for (int r = 0; r < 3; ++r) {
    t[r].hostname = "node" + std::to_string(r / 2);
    t[r].node_index = r / 2;
    t[r].device_uuid = "GPU-" + std::to_string(r);
  }
  CHECK(shared_device_error(t).empty());
  t[1].device_uuid = "GPU-0";
  CHECK(shared_device_error(t) ==
        "ranks 0 and 1 on node0 share GPU GPU-0 (more ranks on the node than visible GPUs); start one rank per GPU, "
        "or set share_devices = true in [defaults]");
  t[1].device_uuid = "GPU-2";  // same UUID string as rank 2, but rank 2 is on another node
  CHECK(shared_device_error(t).empty());
  for (auto& r : t) r.device_uuid.clear();  // CPU ranks have no UUID
  CHECK(shared_device_error(t).empty());
}

TEST_CASE("a case whose first timed sample is much slower than its median is flagged cold", "[report][warmup]") {
  RunRecord run;
  CaseRecord warm = timed_case(0, "parallel", 2, 5, 0.1);
  CaseRecord cold = timed_case(1, "parallel", 2, 5, 0.1);
  cold.device_time_s[5] = 0.1 * 1.5 * 1.4;  // rank 1's first sample: 1.4x its median
  CaseRecord barely = timed_case(2, "parallel", 2, 5, 0.1);
  barely.device_time_s[0] = 0.1 * 1.2;  // 1.2x: within the margin
  run.cases = {warm, cold, barely};
  const auto rows = report_no_stragglers(run);
  CHECK(rows[0].flags.empty());
  REQUIRE(rows[1].flags.size() == 1);
  CHECK(rows[1].flags[0] ==
        "cold: the first timed sample took 1.40x the median, 60.0 ms more, on rank 1 (more warm-up: warmup_s)");
  CHECK(rows[2].flags.empty());
  const std::string table = render_table("f.h5", run, rows);
  CHECK(table.find("note: case 2: cold: the first timed sample took 1.40x") != std::string::npos);
  // The verdict's warning on rank 1's GPU; none for the warm cases.
  REQUIRE(rows[1].findings.size() == 1);
  CHECK(rows[1].findings[0].rank == 1);
  CHECK(rows[1].findings[0].severity == Severity::warn);
  CHECK(rows[1].findings[0].reason == "cold: a first timed sample well above the median (more warm-up: warmup_s)");
  CHECK(rows[0].findings.empty());
  CHECK(rows[2].findings.empty());
  const auto json = nlohmann::json::parse(render_json(rows));
  CHECK(json[1]["flags"][0] == rows[1].flags[0]);
  CHECK_FALSE(json[0].contains("flags"));
  CHECK(render_csv(rows).find(",\"cold: the first timed sample took 1.40x the median, 60.0 ms more, on rank 1") !=
        std::string::npos);
}

TEST_CASE("GPU readings during the timed samples flag throttling and low clocks, not idle time around them",
          "[report][telemetry]") {
  RunRecord run;
  run.ranks.resize(2);
  run.ranks[0].max_sm_clock_mhz = run.ranks[1].max_sm_clock_mhz = 2000;
  CaseRecord c = timed_case(0, "parallel", 2, 5, 0.1);  // samples from t = 0 to about 40.15
  std::vector<std::vector<TelemetrySample>> readings(2);  // each rank's, as its sampler took them
  auto reading = [&readings](int rank, double t, double sm, std::int64_t reasons) {
    TelemetrySample s;
    s.time_s = t;
    s.sm_clock_mhz = sm;
    s.mem_clock_mhz = 2600;
    s.temperature_c = 50;
    s.power_w = 300;
    s.clock_event_reasons = reasons;
    readings[static_cast<std::size_t>(rank)].push_back(s);
  };
  // Before the first sample the GPU idled at a low clock: not counted.
  reading(0, -1.0, 300, 0x1);
  reading(1, -1.0, 300, 0x1);
  for (double t : {5.0, 15.0, 25.0}) {
    reading(0, t, 1950, 0);             // rank 0: near its maximum, nothing limits it
    reading(1, t, 1400, 0x4 | 0x40);    // rank 1: power cap and hardware thermal slowdown
  }
  c.tables = {testing::telemetry_table_of(readings, 10.0)};
  run.cases = {c};
  auto rows = report_no_stragglers(run);
  REQUIRE(rows[0].flags.size() == 2);
  CHECK(rows[0].flags[0] == "throttled: sw_power_cap (rank 1), hw_thermal (rank 1)");
  CHECK(rows[0].flags[1] == "clocks: the SM clock was 1400 MHz (median), 70% of its 2000 MHz maximum, on rank 1");
  // Each on rank 1's GPU, for the verdict: the two reasons, and the low clock.
  std::vector<std::string> on_rank1;
  for (const Finding& f : rows[0].findings) {
    CHECK(f.kind == SubjectKind::gpu);
    CHECK(f.rank == 1);
    CHECK(f.severity == Severity::warn);
    on_rank1.push_back(f.reason);
  }
  CHECK(on_rank1 == std::vector<std::string>{"throttled: sw_power_cap", "throttled: hw_thermal",
                                             "low clocks: the SM clock's median under 90% of its maximum"});

  // The same GPU at full clock with only idle and sync-boost reasons: nothing to flag.
  CaseRecord fine = timed_case(0, "parallel", 2, 5, 0.1);
  CaseTable& t = c.tables.at(0);
  REQUIRE(t.rows() == 8);
  t.column("sm_clock")->reals.assign(t.rows(), 1990);
  t.column("clock_event_reasons")->ints.assign(t.rows(), 0x1 | 0x10);
  fine.tables = c.tables;
  run.cases = {fine};
  CHECK(report_no_stragglers(run)[0].flags.empty());
}

TEST_CASE("a rank or a node slower than the others by more than the threshold is named, with where it ran",
          "[report][stragglers]") {
  RunRecord run;
  run.ranks.resize(4);
  for (int r = 0; r < 4; ++r) {
    run.ranks[r].hostname = r < 2 ? "alpha" : "beta";
    run.ranks[r].node_index = r / 2;
    run.ranks[r].local_rank = r % 2;
    run.ranks[r].device_name = "GPU X";
    run.ranks[r].device_pci_bus_id = "0000:0" + std::to_string(r) + ":00.0";
  }
  run.cases = {timed_case(0, "parallel", 4, 5, 0.1)};  // rank 3 takes 1.5x the others
  auto rows = build_report(run);
  REQUIRE(rows[0].stragglers.ranks.size() == 1);
  CHECK(rows[0].stragglers.nodes.empty());  // beta's other rank is as fast as alpha's: not the node
  CHECK(rows[0].flags == std::vector<std::string>{
                             "straggler: rank 3 on beta (node 1, local rank 1, GPU X 0000:03:00.0): median 1.50x the "
                             "other ranks'"});
  // Both ranks of beta slow alike: the node is named (and each of its ranks against the other three).
  CaseRecord& c = run.cases[0];
  for (int r = 2; r < 4; ++r) {
    for (int i = 0; i < c.reps; ++i) c.wall_end_s[r * c.reps + i] = c.wall_start_s[r * c.reps + i] + 0.13;
  }
  rows = build_report(run);
  REQUIRE(rows[0].stragglers.nodes.size() == 1);
  CHECK(rows[0].stragglers.nodes[0].host == "beta");
  CHECK(rows[0].flags[0] == "slow node: beta (ranks 2,3): its fastest rank 1.30x the other nodes' median rank");
  CHECK(report_with_stragglers_over(run, 0.35)[0].flags.empty());  // a looser threshold: nothing named
  const auto json = nlohmann::json::parse(render_json(rows));
  CHECK(json[0]["stragglers"]["nodes"][0]["host"] == "beta");
  CHECK(json[0]["stragglers"]["ranks"].size() == 2);  // 1.3x the median of the other three ranks
}

TEST_CASE("run and info show each GPU's telemetry, links and NUMA affinity, CPU ranks show nothing", "[telemetry]") {
  std::vector<RankRecord> table(3);
  table[0].device_kind = "cuda";
  table[0].device_pci_bus_id = "0000:18:00.0";
  table[0].telemetry = "nvml";
  table[0].pcie_gen = table[0].pcie_max_gen = 5;
  table[0].pcie_width = table[0].pcie_max_width = 16;
  table[0].nvlinks_active = 18;
  table[0].max_sm_clock_mhz = 1980;
  table[0].power_limit_w = 700;
  table[0].numa_node = 0;
  table[0].local_cpulist = "0-15";
  table[1].device_kind = "cuda";
  table[1].device_pci_bus_id = "0000:2a:00.0";
  table[1].telemetry = "not available: libnvidia-ml.so.1 could not be loaded";
  table[2].device_kind = "cpu";
  const std::vector<LinkRecord> links{{0, "0000:2a:00.0", 18, "node"}, {1, "0000:18:00.0", 18, ""}};
  const std::string s = format_gpu_facts(table, links);
  CHECK(s ==
        "  rank 0 GPU 0000:18:00.0: telemetry nvml; PCIe gen 5 x16 (max gen 5 x16); NVLinks up 18; max SM clock 1980 "
        "MHz; power limit 700 W; NUMA node 0, CPUs 0-15\n"
        "    to 0000:2a:00.0: 18 NVLink(s), common ancestor node\n"
        "  rank 1 GPU 0000:2a:00.0: telemetry not available: libnvidia-ml.so.1 could not be loaded; NUMA node ?\n"
        "    to 0000:18:00.0: 18 NVLink(s), common ancestor ?\n");
  CHECK(format_gpu_facts({table[2]}, {}).empty());
}

TEST_CASE("phases give each phase's time, the exposed transfer and the overlap fraction", "[report][phases]") {
  RunRecord run;
  CaseRecord c = timed_case(0, "parallel", 2, 5, 0.1);  // device time 0.1 (rank 0), 0.15 (rank 1) per sample
  c.workload = "pipeline";  // a workload whose compute and transfer phases the report turns into overlap
  testing::PhaseRows phases;
  phases.names = {"compute", "transfer"};
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < 5; ++i) {
      const double t0 = c.wall_start_s[static_cast<std::size_t>(r * 5 + i)];
      // compute 0.08 in two intervals; transfer 0.04, of which 0.02 runs after the compute
      for (auto [phase, a, b] : {std::tuple<int, double, double>{0, 0.0, 0.05}, {0, 0.05, 0.08}, {1, 0.06, 0.10}}) {
        phases.add(r, i, phase, t0 + a, t0 + b);
      }
    }
  }
  c.tables = {testing::phases_table_of(phases, 2)};
  run.cases = {c};
  const auto rows = build_report(run);
  REQUIRE(rows[0].phase_s.size() == 2);
  CHECK(rows[0].phase_s[0].first == "compute");
  CHECK(rows[0].phase_s[0].second == Approx(0.08));
  CHECK(rows[0].phase_s[1].second == Approx(0.04));
  // The transfer [0.06, 0.10] runs 0.02 outside the compute [0, 0.08]: exposed 0.02, 50 % of it hidden, on both
  // ranks. Rank 1's longer device time (0.15) is time no phase covers: overhead, not exposed transfer. The
  // breakdown's figures, the same in every view.
  REQUIRE(rows[0].figure_value("exposed_transfer_s"));
  CHECK(*rows[0].figure_value("exposed_transfer_s") == Approx(0.02));
  REQUIRE(rows[0].breakdown);
  CHECK(*rows[0].figure_value("exposed_transfer_s") == rows[0].breakdown->exposed_s);
  REQUIRE(rows[0].figure_value("overlap_fraction"));
  CHECK(*rows[0].figure_value("overlap_fraction") == Approx(0.5));
  CHECK(render_table("f.h5", run, rows, true).find("note: case 1: phases compute 80.0 ms transfer 40.0 ms; exposed "
                                            "transfer 20.0 ms, overlap 50%") != std::string::npos);
  const auto json = nlohmann::json::parse(render_json(rows));
  CHECK(json[0]["phase_s"]["transfer"] == Approx(0.04));
  CHECK(json[0]["overlap_fraction"] == Approx(0.5));
  CHECK(json[0]["exposed_transfer_s"] == json[0]["breakdown"]["exposed_transfer_s"]);
}

TEST_CASE("strong scaling: group_size rows against the group_size = 1 row, ranks outside the group left out",
          "[report][scaling]") {
  // Two ranks; group_size 1 (rank 1 sits out, its samples take no time) and group_size 2.
  auto scaled = [](std::size_t index, int g, double each) {
    CaseRecord c = timed_case(index, "parallel", 2, 5, each);
    c.workload = "distributed_gemm";
    c.scope = Scope::world;
    c.params.set("group_size", std::int64_t{g});
    c.flops_per_sample = 2e6 / g;  // rank 0's share
    c.group = {0, g > 1 ? 0 : -1};
    c.group_size = {g, g > 1 ? g : 0};
    c.op_bytes = {0, 0};
    c.bus_factor = {0, 0};
    c.wrong_elements = {0, 0};
    if (g == 1) {
      for (int i = 0; i < 5; ++i) {  // rank 1 did nothing
        c.device_time_s[5 + i] = 1e-6;
        c.wall_end_s[5 + i] = c.wall_start_s[5 + i] + 1e-6;
      }
    }
    return c;
  };
  RunRecord run;
  run.cases = {scaled(0, 1, 0.2), scaled(1, 2, 0.1)};
  const auto rows = build_report(run);
  // g = 1: makespan 0.2 (rank 0); per-rank rate from rank 0 alone, not the idle rank's microseconds.
  CHECK(rows[0].median_s == Approx(0.2));
  REQUIRE(rows[0].gflops);
  CHECK(*rows[0].gflops == Approx(2e6 / 0.2 / 1e9));
  CHECK(*rows[0].total_gflops == Approx(2e6 / 0.2 / 1e9));
  CHECK(rows[0].slowest_rank == 0);
  CHECK_FALSE(rows[0].speedup);
  CHECK_FALSE(rows[0].busbw_gbps);  // not a transfer as nccl-tests counts one
  // g = 2: makespan 0.15 (rank 1 is the straggler at 1.5x): speedup 0.2 / 0.15, efficiency half of it.
  REQUIRE(rows[1].speedup);
  CHECK(*rows[1].speedup == Approx(0.2 / 0.15));
  CHECK(*rows[1].efficiency == Approx(0.2 / 0.15 / 2));
  // Its baseline is case index 0 (shown as case 1), the group_size = 1 row; the row says so in its note.
  CHECK(rows[0].notes.empty());
  REQUIRE(rows[1].notes.size() == 1);
  CHECK(rows[1].notes[0].rfind("case 2: speedup and eff against case 1 (group_size = 1)", 0) == 0);
  CHECK(*rows[1].total_gflops == Approx(2 * 1e6 / 0.15 / 1e9));  // the whole product over the makespan
  CHECK(render_table("f.h5", run, rows).find("note: case 2: speedup and eff against case 1 (group_size = 1)") !=
        std::string::npos);
}

TEST_CASE("a node with more ranks than cores gets one warning, the rank table says which clocks are rank 0's",
          "[report][ranks]") {
  std::vector<RankRecord> table(5);
  for (int r = 0; r < 5; ++r) {
    table[r].hostname = r < 3 ? "a" : "b";
    table[r].node_index = r < 3 ? 0 : 1;
    table[r].local_rank = r < 3 ? r : r - 3;
    table[r].local_size = r < 3 ? 3 : 2;
    table[r].node_cores = 2;
    table[r].clock_shared = r < 3;
    table[r].clock_offset_start_s = r < 3 ? 0.0 : 12e-6;
    table[r].clock_uncertainty_start_s = r < 3 ? 0.0 : 3e-6;
  }
  const auto w = oversubscription_warnings(table);
  REQUIRE(w.size() == 1);
  CHECK(w[0] == "node a: 3 ranks on 2 cores: ranks that run at once compete for cores, so parallel times and speedups "
                "understate what the hardware can do");
  const std::string t = format_rank_table(table);
  CHECK(t.find("0 (rank 0's clock)") != std::string::npos);
  CHECK(t.find("12 +- 3 us") != std::string::npos);
  table[0].node_cores = 0;  // unknown: no warning
  CHECK(oversubscription_warnings(table).empty());
}

namespace {
// Every line of `text` at most 80 characters.
bool fits_80(const std::string& text) {
  std::size_t from = 0;
  while (from < text.size()) {
    const std::size_t nl = text.find('\n', from);
    if (nl - from > 80) return false;
    from = nl + 1;
  }
  return true;
}

// timed_case with every sample's times scaled by 1 + `spread` x a fixed pattern in [-1, 1].
CaseRecord noisy_case(std::size_t index, const std::string& mode, int ranks, int reps, double each, double spread) {
  CaseRecord c = timed_case(index, mode, ranks, reps, each);
  for (std::size_t i = 0; i < c.wall_end_s.size(); ++i) {
    const double jitter = 1.0 + spread * std::sin(static_cast<double>(i) * 2.7);
    c.wall_end_s[i] = c.wall_start_s[i] + (c.wall_end_s[i] - c.wall_start_s[i]) * jitter;
    c.device_time_s[i] *= jitter;
  }
  return c;
}
}  // namespace

TEST_CASE("the default table fits 80 columns: a block per experiment with what varies in it", "[report][table]") {
  RunRecord run;
  run.ranks.resize(2);
  for (std::size_t i = 0; i < 4; ++i) {
    CaseRecord c = noisy_case(i, i % 2 ? "parallel" : "serial", 2, 10, 0.01, 0.05);
    c.experiment = "gemm-small";
    c.params.set("dtype", std::string(i < 2 ? "fp64" : "fp32"));
    c.params.set("impl", std::string("vendor"));
    run.cases.push_back(c);
  }
  const auto rows = report_no_stragglers(run);
  const std::string t = render_table("/some/rather/long/path/to/results/of/a/run/default-20261123.h5", run, rows);
  INFO(t);
  CHECK(fits_80(t));
  CHECK(t.find("gemm-small: gemm, size=100 impl=vendor, 2 rank(s) on 1 node(s)\n") != std::string::npos);
  CHECK(t.find("#  dtype  mode") != std::string::npos);  // dtype and mode vary; size and impl do not
  CHECK(t.find("GF/s/rank  speedup  eff  slowest") != std::string::npos);
  CHECK(t.find("\n2  fp64   parallel") != std::string::npos);
  // --wide: the one table with every column, and the speedup's interval.
  const std::string w = render_table("f.h5", run, rows, true);
  CHECK(w.find("rate total") != std::string::npos);
  CHECK(w.find("size=100 dtype=fp64 impl=vendor") != std::string::npos);
  CHECK(w.find(format_number("%.2fx (", *rows[1].speedup)) != std::string::npos);
}

TEST_CASE("a table too wide for 80 columns puts the varying parameters on a line of their own", "[report][table]") {
  RunRecord run;
  for (std::size_t i = 0; i < 2; ++i) {
    CaseRecord c = timed_case(i, "parallel", 2, 10, 0.01);
    c.status = i ? CaseStatus::verify_failed : CaseStatus::ok;
    c.params.set("a_rather_long_parameter_name", std::string(i ? "one-long-value" : "another-long-value"));
    c.params.set("and_another_one", std::int64_t(1000000 + i));
    c.params.set("third_parameter", std::string(i ? "x" : "y"));
    run.cases.push_back(c);
  }
  const std::string t = render_table("f.h5", run, build_report(run));
  INFO(t);
  CHECK(fits_80(t));
  CHECK(t.find("#1: a_rather_long_parameter_name=another-long-value and_another_one=1000000") != std::string::npos);
  CHECK(t.find("verify-failed") != std::string::npos);
}

TEST_CASE("a speedup whose interval holds 1 is shown with its point estimate as uncertain", "[report][intervals]") {
  RunRecord run;
  // The same time in serial (1 rank: one turn) and parallel, 5% noise: no difference.
  run.cases = {noisy_case(0, "serial", 1, 10, 0.1, 0.05), noisy_case(1, "parallel", 1, 10, 0.1, 0.05)};
  // Two ranks: parallel twice as fast, beyond the noise.
  run.cases.push_back(noisy_case(2, "serial", 2, 10, 0.1, 0.05));
  run.cases.push_back(noisy_case(3, "parallel", 2, 10, 0.1, 0.05));
  for (auto* c : {&run.cases[2], &run.cases[3]}) c->params.set("size", std::int64_t{200});
  const auto rows = report_no_stragglers(run);
  REQUIRE(rows[1].speedup_ci);
  CHECK(rows[1].speedup_ci->contains(1.0));
  CHECK(speedup_uncertain(rows[1]));
  REQUIRE(rows[3].speedup_ci);
  CHECK(rows[3].speedup_ci->lo > 1.3);
  CHECK_FALSE(speedup_uncertain(rows[3]));
  CHECK(rows[3].efficiency_ci->lo == Approx(rows[3].speedup_ci->lo / 2));
  const std::string t = render_table("f.h5", run, rows);
  INFO(t);
  CHECK(t.find("no difference") == std::string::npos);
  CHECK(t.find(format_number("%.2fx (uncertain)", *rows[1].speedup)) != std::string::npos);
  CHECK(t.find(format_number("%.2fx", *rows[3].speedup)) != std::string::npos);
  CHECK(t.find(format_number("%.2fx (uncertain)", *rows[3].speedup)) == std::string::npos);
  const std::string wide = render_table("f.h5", run, rows, true);
  INFO(wide);
  CHECK(wide.find(format_number("%.2fx (", *rows[1].speedup) + format_number("%.2f-", rows[1].speedup_ci->lo) +
                  format_number("%.2f, uncertain)", rows[1].speedup_ci->hi)) != std::string::npos);
  const auto j = nlohmann::json::parse(render_json(rows));
  CHECK(j[1]["speedup_no_difference"] == true);
  CHECK(j[3]["speedup_no_difference"] == false);
  CHECK(j[3]["speedup_lo"].get<double>() == Approx(rows[3].speedup_ci->lo));
  CHECK(j[3]["median_hi_s"].get<double>() == Approx(rows[3].median_ci->hi));

  // Five samples are too few for an interval: the speedup is printed with a note saying so.
  RunRecord few;
  few.cases = {timed_case(0, "serial", 2, 5, 0.1), timed_case(1, "parallel", 2, 5, 0.1)};
  const auto few_rows = report_no_stragglers(few);
  CHECK_FALSE(few_rows[1].speedup_ci);
  CHECK(render_table("f.h5", few, few_rows).find("note: case 2: fewer than 7 samples: the speedup has no interval") !=
        std::string::npos);
}

TEST_CASE("report --baseline: ratio of medians with an interval and a verdict per case", "[report][baseline]") {
  RunRecord old_run, new_run;
  old_run.cases = {noisy_case(0, "serial", 2, 10, 0.1, 0.03), noisy_case(1, "parallel", 2, 10, 0.1, 0.03),
                   noisy_case(2, "parallel", 2, 10, 0.1, 0.03)};
  old_run.cases[2].params.set("size", std::int64_t{300});
  new_run.cases = {noisy_case(0, "serial", 2, 10, 0.1, 0.03), noisy_case(1, "parallel", 2, 10, 0.15, 0.03),
                   noisy_case(2, "parallel", 2, 10, 0.05, 0.03), noisy_case(3, "parallel", 2, 10, 0.1, 0.03)};
  new_run.cases[2].params.set("size", std::int64_t{300});
  new_run.cases[3].params.set("size", std::int64_t{400});
  for (auto& c : new_run.cases) c.params.set("threads", std::int64_t{4});  // other BLAS threads: the same cases
  const auto base = report_no_stragglers(old_run);
  auto rows = report_no_stragglers(new_run);
  const BaselineSummary summary = compare_with_baseline(rows, base, "old.h5");
  REQUIRE(rows[0].baseline);
  CHECK(rows[0].baseline->verdict == "within noise");
  CHECK(rows[0].baseline->ratio == Approx(1.0));
  CHECK(rows[1].baseline->verdict == "slower");
  CHECK(rows[1].baseline->ratio == Approx(1.5).epsilon(0.05));
  CHECK(rows[1].baseline->ratio_ci->lo > 1.0);
  CHECK(rows[2].baseline->verdict == "faster");
  CHECK(rows[2].baseline->case_index == 2);
  CHECK(rows[3].baseline->verdict == "not in baseline");
  const std::string t = render_baseline(rows, summary);
  INFO(t);
  CHECK(fits_80(t));
  CHECK(t.find("against the baseline old.h5") == 0);
  CHECK(t.find("slower\n") != std::string::npos);
  CHECK(t.find("faster\n") != std::string::npos);
  const auto j = nlohmann::json::parse(render_json(rows));
  CHECK(j[1]["baseline"]["verdict"] == "slower");
  CHECK(j[1]["baseline"]["ratio_lo"].is_number());
  CHECK_FALSE(j[3]["baseline"].contains("ratio"));
  CHECK(render_csv(rows).find(",\"old.h5\",2,") != std::string::npos);

  // Too few samples for an interval: no verdict either way.
  RunRecord few;
  few.cases = {timed_case(0, "serial", 2, 5, 0.1)};
  auto few_rows = build_report(few);
  compare_with_baseline(few_rows, build_report(few), "few.h5");
  CHECK(few_rows[0].baseline->verdict == "too few samples");
}

TEST_CASE("check names each limit of a planned case that did not run", "[report][expect]") {
  RunRecord run;
  run.cases = {timed_case(0, "serial", 2, 5, 0.1)};
  run.cases[0].expect = {{"max_median_s", 10.0}};
  run.cases_planned = 3;
  run.plan = {{"g size=100 [serial]", {{"max_median_s", 10.0}}},
              {"g size=100 [parallel]", {{"max_median_s", 10.0}, {"min_efficiency", 0.9}}},
              {"g size=200 [serial]", {}}};
  const auto rows = report_no_stragglers(run);
  const auto unrun = unchecked_limits(run, rows);
  REQUIRE(unrun.size() == 2);
  CHECK(unrun[0].case_index == 1);
  CHECK(unrun[0].label == "g size=100 [parallel]");
  CHECK(unrun[0].limit == "max_median_s");
  CHECK(unrun[1].limit == "min_efficiency");
  CHECK(unrun[1].expected == 0.9);
  CHECK_FALSE(unrun[1].holds);
  CHECK_FALSE(unrun[1].measured);
  auto checks = check_expectations(rows);
  checks.insert(checks.end(), unrun.begin(), unrun.end());
  const std::string text = render_checks("f.h5", checks);
  INFO(text);
  CHECK(text == "case 2 (g size=100 [parallel]):\n"
                "  max_median_s 10.0 s: FAILED; the case did not run\n"
                "  min_efficiency 90.0%: FAILED; the case did not run\n"
                "f.h5: check: 4 limits checked in 2 cases: 2 hold, 2 FAILED\n");  // case 1: verified, max_median_s
  run.plan.clear();  // files before schema 1.5: nothing to go by
  CHECK(unchecked_limits(run, rows).empty());
}

TEST_CASE("limits of [experiment.expect] are checked against each row they apply to", "[report][expect]") {
  RunRecord run;
  run.cases = {timed_case(0, "serial", 2, 5, 0.1), timed_case(1, "parallel", 2, 5, 0.1)};
  for (auto& c : run.cases) c.expect = {{"min_gflops_per_rank", 0.01}, {"min_efficiency", 0.9}};
  auto rows = report_no_stragglers(run);
  // Rank medians: 0.1 and 0.15 s; GF/s per rank = 2e6 / 0.125 / 1e9 = 0.016; efficiency 0.25 / 0.15 / 2 = 0.83.
  auto checks = check_expectations(rows);
  REQUIRE(checks.size() == 5);  // each case verified; min_efficiency: the parallel row only
  std::vector<std::string> names;
  for (const auto& c : checks) names.push_back(std::to_string(c.case_index) + " " + c.limit);
  CHECK(names == std::vector<std::string>{"0 verified", "0 min_gflops_per_rank", "1 verified",
                                          "1 min_gflops_per_rank", "1 min_efficiency"});
  for (std::size_t i : {0, 1, 2, 3}) CHECK(checks[i].holds);
  CHECK_FALSE(checks[0].measured);  // verified: the case's status, no number
  CHECK_FALSE(checks[4].holds);
  CHECK(*checks[4].measured == Approx(0.25 / 0.15 / 2));
  CHECK_FALSE(all_hold(checks));
  const std::string text = render_checks("f.h5", checks);
  INFO(text);
  // report --check: the limit that failed under its case, then the verdict.
  CHECK(text == "case 2 (g size=100 [parallel]):\n"
                "  min_efficiency 90.0%: FAILED, measured 83.3%\n"
                "f.h5: check: 5 limits checked in 2 cases: 4 hold, 1 FAILED\n");
  // --verbose: every limit of every case, then the verdict.
  CHECK(render_checks("f.h5", checks, true) ==
        "case 1 (g size=100 [serial]):\n"
        "  verified: holds\n"
        "  min_gflops_per_rank 0.0100 GF/s: holds, measured 0.0160 GF/s\n"
        "case 2 (g size=100 [parallel]):\n"
        "  verified: holds\n"
        "  min_gflops_per_rank 0.0100 GF/s: holds, measured 0.0160 GF/s\n"
        "  min_efficiency 90.0%: FAILED, measured 83.3%\n"
        "f.h5: check: 5 limits checked in 2 cases: 4 hold, 1 FAILED\n");
  const auto j = nlohmann::json::parse(render_json(rows));
  CHECK(j[1]["expect"].size() == 2);  // the config's limits; verified is the row's status
  CHECK(j[1]["expect"][1]["limit"] == "min_efficiency");
  CHECK(j[1]["expect"][1]["holds"] == false);
  CHECK(j[1]["expect"][1]["measured"].get<double>() == Approx(0.25 / 0.15 / 2));

  // A failed verification fails the case's check, and its limits; a skipped case has no result to verify, and
  // fails its limits; a max_ limit holds at or below.
  run.cases[0].status = CaseStatus::skipped;
  run.cases[0].status_reason = "needs 4 ranks";
  run.cases[1].status = CaseStatus::verify_failed;
  run.cases[1].wrong_elements = {0, 3};
  for (auto& c : run.cases) c.expect = {{"max_median_s", 10.0}};
  checks = check_expectations(report_no_stragglers(run));
  REQUIRE(checks.size() == 4);
  CHECK(checks[0].not_applicable == "the case was skipped: needs 4 ranks");
  CHECK(checks[1].why == "the case was skipped: needs 4 ranks");
  CHECK_FALSE(checks[1].holds);
  CHECK(checks[2].limit == "verified");
  CHECK_FALSE(checks[2].holds);
  CHECK(checks[2].why == "the case failed verification: 3 wrong element(s) on a rank");
  CHECK(checks[3].why == "the case failed verification");
  CHECK_FALSE(checks[3].holds);
  CHECK(render_checks("f.h5", checks, true) ==
        "case 1 (g size=100 [serial]):\n"
        "  verified: not applicable: the case was skipped: needs 4 ranks\n"
        "  max_median_s 10.0 s: FAILED; the case was skipped: needs 4 ranks\n"
        "case 2 (g size=100 [parallel]):\n"
        "  verified: FAILED; the case failed verification: 3 wrong element(s) on a rank\n"
        "  max_median_s 10.0 s: FAILED, measured 150 ms; the case failed verification\n"
        "f.h5: check: 4 limits checked in 2 cases: 0 hold, 3 FAILED, 1 not applicable\n");
  CHECK(render_checks("f.h5", checks) ==
        "case 1 (g size=100 [serial]):\n"
        "  max_median_s 10.0 s: FAILED; the case was skipped: needs 4 ranks\n"
        "case 2 (g size=100 [parallel]):\n"
        "  verified: FAILED; the case failed verification: 3 wrong element(s) on a rank\n"
        "  max_median_s 10.0 s: FAILED, measured 150 ms; the case failed verification\n"
        "not applicable: verified in case 1: the case was skipped: needs 4 ranks\n"
        "f.h5: check: 4 limits checked in 2 cases: 0 hold, 3 FAILED, 1 not applicable\n");
  run.cases[1].status = CaseStatus::ok;
  checks = check_expectations(report_no_stragglers(run));
  CHECK(checks[2].holds);
  CHECK(checks[3].holds);
  CHECK(render_checks("f.h5", {checks[2], checks[3]}) == "f.h5: check: 2 limits checked in 1 case: all hold\n");
}

TEST_CASE("the straggler limit bounds the report's slowest-rank ratio, in every mode", "[report][expect]") {
  RunRecord run;
  run.cases = {timed_case(0, "serial", 3, 5, 0.1), timed_case(1, "parallel", 3, 5, 0.1)};
  for (auto& c : run.cases) c.expect = {{"max_slowest_ratio", 1.4}};
  auto rows = report_no_stragglers(run);
  // The last of 3 ranks takes 1.5x the others: its median over the others' median (0.1 s) is 1.5.
  auto checks = check_expectations(rows);
  REQUIRE(checks.size() == 4);
  for (std::size_t i : {1, 3}) {
    CHECK(checks[i].limit == "max_slowest_ratio");
    CHECK(*checks[i].measured == rows[i / 2].slowest_ratio);
    CHECK(*checks[i].measured == Approx(1.5));
    CHECK_FALSE(checks[i].holds);
  }
  CHECK(render_checks("f.h5", checks) ==
        "case 1 (g size=100 [serial]):\n"
        "  max_slowest_ratio 1.40x: FAILED, measured 1.50x\n"
        "case 2 (g size=100 [parallel]):\n"
        "  max_slowest_ratio 1.40x: FAILED, measured 1.50x\n"
        "f.h5: check: 4 limits checked in 2 cases: 2 hold, 2 FAILED\n");
  for (auto& c : run.cases) c.expect = {{"max_slowest_ratio", 1.6}};
  CHECK(all_hold(check_expectations(report_no_stragglers(run))));
  // A number that would read as the limit it failed gets six digits.
  auto& end = run.cases[0].wall_end_s;
  for (std::size_t i = end.size() - 5; i < end.size(); ++i) end[i] += 0.0003;  // the last rank's 5: 0.1503 s
  run.cases[0].expect = {{"max_slowest_ratio", 1.5}};
  run.cases.resize(1);
  checks = check_expectations(report_no_stragglers(run));
  CHECK(render_checks("f.h5", checks, true).find("  max_slowest_ratio 1.50x: FAILED, measured 1.503x\n") !=
        std::string::npos);
}

namespace {
// `ranks` ranks of one node with `cores` cores (0: not known).
std::vector<RankRecord> one_node(int ranks, int cores) {
  std::vector<RankRecord> out(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    out[r].local_rank = r;
    out[r].local_size = ranks;
    out[r].node_cores = cores;
  }
  return out;
}
}  // namespace

TEST_CASE("efficiency is not applicable where a node's ranks (times their threads) outnumber its cores",
          "[report][expect]") {
  RunRecord run;
  run.cases = {timed_case(0, "serial", 2, 5, 0.1), timed_case(1, "parallel", 2, 5, 0.1)};
  for (auto& c : run.cases) c.expect = {{"min_efficiency", 0.9}};  // 83% measured: fails where it applies
  const auto efficiency = [&] { return check_expectations(report_no_stragglers(run)).back(); };
  run.ranks = one_node(2, 2);
  CHECK(efficiency().not_applicable.empty());
  CHECK_FALSE(efficiency().holds);
  run.ranks = one_node(2, 0);  // cores not known (older files): the limit applies
  CHECK(efficiency().not_applicable.empty());

  run.ranks = one_node(2, 1);
  const LimitCheck na = efficiency();
  CHECK(na.not_applicable == "2 ranks on 1 core");
  CHECK(*na.measured == Approx(0.25 / 0.15 / 2));  // measured all the same, and shown in JSON
  auto checks = check_expectations(report_no_stragglers(run));
  CHECK(all_hold(checks));  // it fails nothing
  CHECK(render_checks("f.h5", checks) ==
        "not applicable: min_efficiency 90.0% in case 2: 2 ranks on 1 core\n"
        "f.h5: check: 3 limits checked in 2 cases: 2 hold, 1 not applicable\n");
  CHECK(render_checks("f.h5", checks, true).find("  min_efficiency 90.0%: not applicable: 2 ranks on 1 core\n") !=
        std::string::npos);
  const auto j = nlohmann::json::parse(render_json(report_no_stragglers(run)));
  CHECK(j[1]["expect"][0]["holds"].is_null());
  CHECK(j[1]["expect"][0]["not_applicable"] == "2 ranks on 1 core");

  // On the CPU backend each rank's BLAS threads need cores too; a GPU rank needs one.
  run.ranks = one_node(2, 2);
  for (auto& c : run.cases) c.params.set("threads", std::int64_t{2});
  CHECK(efficiency().not_applicable == "2 ranks x 2 threads on 2 cores");
  for (auto& c : run.cases) c.backend = Backend::cuda;
  CHECK(efficiency().not_applicable.empty());

  // Several nodes: the one with the most ranks per core.
  std::vector<RankRecord> two = one_node(2, 8);
  for (auto& r : one_node(3, 2)) two.push_back(r);
  run.ranks = two;
  CHECK(most_crowded_node(run) == std::pair<int, int>{3, 2});
  CHECK(efficiency().not_applicable == "3 ranks on 2 cores");
  run.ranks.clear();
  CHECK(most_crowded_node(run) == std::pair<int, int>{0, 0});
}

namespace {
// A 2-rank gemm case of `impl` taking `each` seconds per sample for `ops` matmuls of 2e6 flops.
CaseRecord gemm_case(std::size_t index, const std::string& experiment, const std::string& impl,
                     const std::string& dtype, std::int64_t ops, double each, const std::string& mode = "parallel") {
  CaseRecord c = timed_case(index, mode, 2, 5, each);
  c.experiment = experiment;
  c.params.set("dtype", dtype);
  c.params.set("impl", impl);
  c.params.set("ops", ops);
  c.flops_per_sample = 2e6 * static_cast<double>(ops);
  return c;
}
}  // namespace

TEST_CASE("our gemm kernels against the vendor library on the same problem: its share of the vendor's GFLOP/s",
          "[report][vendor]") {
  RunRecord run;
  run.ranks.resize(2);
  run.cases = {
      gemm_case(0, "cublas", "vendor", "fp32", 1, 0.001),
      gemm_case(1, "ladder", "naive", "fp32", 2, 0.004),              // 500 matmuls/s against case 2's 2000
      gemm_case(2, "ladder", "vendor", "fp32", 4, 0.002),             // the same experiment's, over case 0
      gemm_case(3, "ladder", "naive", "fp64", 1, 0.004),              // no fp64 vendor row
      gemm_case(4, "ladder", "naive", "fp32", 1, 0.004, "serial"),    // no serial vendor row
      gemm_case(5, "kernels", "tiled", "fp32", 1, 0.003),             // none in its experiment: case 0
      gemm_case(6, "ladder", "naive", "fp32", 1, 0.004),              // a size of its own below
      gemm_case(7, "ladder", "vendor", "fp32", 1, 0.001),             // ... vendor on 4 ranks
      gemm_case(8, "ladder", "vendor", "fp32", 1, 0.001),             // ... and skipped
      gemm_case(9, "overlap", "naive", "fp32", 1, 0.004),             // not a gemm case
  };
  for (std::size_t i : {6, 7, 8}) run.cases[i].params.set("size", std::int64_t{300});
  run.cases[7] = [&] {
    CaseRecord c = timed_case(7, "parallel", 4, 5, 0.001);
    c.experiment = "ladder";
    c.params = run.cases[6].params;
    c.params.set("impl", std::string("vendor"));
    return c;
  }();
  run.cases[8].status = CaseStatus::skipped;
  run.cases[9].workload = "pipeline";
  auto rows = report_no_stragglers(run);
  REQUIRE(rows.size() == 10);
  // vendor_case: the vendor row's case_index (0-based; every view shows it from 1).
  const auto vendor_case = [](const ReportRow& r) { return r.figure_value("vendor_case"); };
  REQUIRE(rows[1].figure_value("of_vendor"));
  CHECK(*rows[1].figure_value("of_vendor") == Approx(0.25));
  CHECK(vendor_case(rows[1]) == std::optional<double>(2));
  REQUIRE(rows[1].figure("vendor_case"));
  CHECK(rows[1].figure("vendor_case")->kind == FigureKind::case_number);
  REQUIRE(rows[5].figure_value("of_vendor"));
  CHECK(*rows[5].figure_value("of_vendor") == Approx(1.0 / 3));
  CHECK(vendor_case(rows[5]) == std::optional<double>(0));
  for (std::size_t i : {0, 2, 3, 4, 6, 7, 8, 9}) {
    INFO("case " << i);
    CHECK_FALSE(rows[i].figure_value("of_vendor"));
    CHECK_FALSE(vendor_case(rows[i]));
  }

  // A vendor result that failed its check is no reference: the next one is.
  run.cases[2].status = CaseStatus::verify_failed;
  CHECK(vendor_case(report_no_stragglers(run)[1]) == std::optional<double>(0));
  // Nor is a kernel's own failed result compared.
  run.cases[2].status = CaseStatus::ok;
  run.cases[1].status = CaseStatus::verify_failed;
  CHECK_FALSE(report_no_stragglers(run)[1].figure_value("of_vendor"));
  run.cases[1].status = CaseStatus::ok;
  // Nor is a vendor case whose ranks were spread over other nodes.
  run.cases[2].nodes = 2;
  CHECK(vendor_case(report_no_stragglers(run)[1]) == std::optional<double>(0));
  run.cases[2].nodes = 1;

  // [experiment.expect] min_of_vendor: on our kernels' rows only; without a vendor row to compare, it fails.
  for (auto& c : run.cases) c.expect = {{"min_of_vendor", 0.3}};
  auto checks = check_expectations(report_no_stragglers(run));
  checks.erase(std::remove_if(checks.begin(), checks.end(), [](const LimitCheck& c) { return c.limit == "verified"; }),
               checks.end());  // every case's (the skipped case 8's not applicable): not of vendor's
  std::vector<std::size_t> checked;
  for (const auto& c : checks) checked.push_back(c.case_index);
  CHECK(checked == std::vector<std::size_t>{1, 3, 4, 5, 6, 9});  // not 0, 2, 7, 8: vendor
  CHECK_FALSE(checks[0].holds);  // 0.25
  CHECK(*checks[0].measured == Approx(0.25));
  CHECK(checks[1].why == "no verified impl = \"vendor\" case of the same problem, mode and ranks in this run");
  CHECK(checks[3].holds);  // 1/3
  const std::string failed = render_checks("f.h5", checks);
  INFO(failed);
  CHECK(failed.find("case 2 (ladder size=100 dtype=fp32 impl=naive ops=2 [parallel]):\n"
                    "  min_of_vendor 30.0%: FAILED, measured 25.0%\n") == 0);
  CHECK(failed.find("\nf.h5: check: 6 limits checked in 6 cases: 1 holds, 5 FAILED\n") ==
        failed.size() - std::string("\nf.h5: check: 6 limits checked in 6 cases: 1 holds, 5 FAILED\n").size());
  for (auto& c : run.cases) c.expect.clear();

  const std::string t = render_table("f.h5", run, rows);
  INFO(t);
  CHECK(fits_80(t));
  CHECK(t.find("of vendor") != std::string::npos);
  CHECK(t.find("  25%  ") != std::string::npos);
  CHECK(t.find("  33%  ") != std::string::npos);
  CHECK(t.find("note: of vendor: GFLOP/s per rank over that of impl vendor (OpenBLAS) for the") != std::string::npos);
  CHECK(t.find("note: case 6: of vendor against case 1 (cublas)") != std::string::npos);
  CHECK(t.find("case 2: of vendor against") == std::string::npos);  // its own experiment's: nothing to say
  const std::string w = render_table("f.h5", run, rows, true);
  const std::size_t head_at = w.find("\n #  name") + 1;  // "#" right-aligned over case numbers up to 10
  const std::string head = w.substr(head_at, w.find('\n', head_at) - head_at);
  INFO(head);
  CHECK(head.find(" eff ") < head.find(" of vendor "));
  CHECK(head.find(" of vendor ") < head.find(" slowest "));
  CHECK(w.find("25%") != std::string::npos);
  CHECK(w.find("\nnote: of vendor: GFLOP/s per rank over that of impl vendor (OpenBLAS) for the same dtype, shape, "
               "mode and ranks in this run\n") != std::string::npos);

  const std::string csv = render_csv(rows);
  CHECK(csv.find(",baseline_verdict,of_vendor,vendor_case,op_time_lo_s,") != std::string::npos);
  CHECK(csv.find(",0.25,3,") != std::string::npos);
  const auto j = nlohmann::json::parse(render_json(rows));
  CHECK(j[1]["of_vendor"] == Approx(0.25));
  CHECK(j[1]["vendor_case"] == 3);  // case 3, as every view numbers it
  CHECK_FALSE(j[0].contains("of_vendor"));
  CHECK_FALSE(j[0].contains("vendor_case"));
}

TEST_CASE("no table shows an of vendor column where no row has one", "[report][vendor]") {
  RunRecord run;
  run.cases = {timed_case(0, "serial", 2, 3, 0.1), timed_case(1, "parallel", 2, 3, 0.1)};
  const auto rows = build_report(run);
  CHECK(render_table("f.h5", run, rows).find("of vendor") == std::string::npos);
  CHECK(render_table("f.h5", run, rows, true).find("of vendor") == std::string::npos);
}

TEST_CASE("a kernel far below the vendor library keeps two significant digits, and on the CUDA backend that is cuBLAS",
          "[report][vendor]") {
  RunRecord run;
  run.ranks.resize(2);
  run.cases = {gemm_case(0, "ladder", "vendor", "fp16", 1, 0.001),
               gemm_case(1, "ladder", "naive", "fp16", 1, 0.001 / 0.0068),
               gemm_case(2, "ladder", "tiled", "fp16", 1, 0.001 / 0.025),
               gemm_case(3, "ladder", "mma", "fp16", 1, 0.001 / 0.0996),  // 9.96% rounds to 10%, not 10.0%
               gemm_case(4, "ladder", "mma_async", "fp16", 1, 0.001 / 0.87)};
  for (auto& c : run.cases) c.backend = Backend::cuda;
  const auto rows = report_no_stragglers(run);
  const std::string t = render_table("f.h5", run, rows);
  INFO(t);
  CHECK(fits_80(t));
  // Each case's line in the table, from its number to its end.
  const auto line = [&t](const std::string& start) {
    const std::size_t at = t.find("\n" + start + "  ");
    return at == std::string::npos ? std::string() : t.substr(at + 1, t.find('\n', at + 1) - at - 1);
  };
  CHECK(line("1").find('%') == std::string::npos);  // the vendor's own row: "-"
  CHECK(line("2").find("  0.68%  ") != std::string::npos);
  CHECK(line("3").find("  2.5%  ") != std::string::npos);
  CHECK(line("4").find("  10%  ") != std::string::npos);
  CHECK(line("5").find("  87%  ") != std::string::npos);
  CHECK(render_table("f.h5", run, rows, true)
            .find("\nnote: of vendor: GFLOP/s per rank over that of impl vendor (cuBLAS) for the same dtype, shape, "
                  "mode and ranks in this run\n") != std::string::npos);
}

TEST_CASE("strings from a file reach the terminal escaped, CSV quoted and escaped, JSON as valid UTF-8",
          "[report][text]") {
  RunRecord run;
  run.warnings = {"warn\x1b[2J"};
  run.status = "complete\r";
  CaseRecord c = timed_case(0, "parallel", 2, 3, 0.1);
  c.experiment = "a\x1b[31m,\"b\"\r\nc";  // as an older version or another writer may have stored it
  c.note = "note\x07\xc2\x9b";
  c.params.set("dtype", std::string("fp\x0b" "64"));
  run.cases = {c};
  const auto rows = build_report(run);
  for (bool wide : {false, true}) {
    const std::string table = render_table("f.h5", for_terminal(run), for_terminal(rows), wide);
    CHECK(std::none_of(table.begin(), table.end(), [](char ch) {
      const auto u = static_cast<unsigned char>(ch);
      return (u < 0x20 && ch != '\n') || u == 0x7f;
    }));
    CHECK(table.find("\xc2\x9b") == std::string::npos);  // C1 CSI
    CHECK(table.find("a\\x1b[31m,\"b\"\\x0d\\x0ac") != std::string::npos);
    CHECK(table.find("note\\x07\\u009b") != std::string::npos);
    CHECK(table.find("WARNING: warn\\x1b[2J") != std::string::npos);
    CHECK(table.find("fp\\x0b64") != std::string::npos);
  }
  const std::string csv = render_csv(rows);
  CHECK(csv.find(",\"a\\x1b[31m,\"\"b\"\"\r\nc\",gemm,parallel,") != std::string::npos);
  CHECK(csv.find("dtype=fp\\x0b64") != std::string::npos);

  // Bytes that are not UTF-8: U+FFFD in JSON, rather than an exception.
  run.cases[0].experiment = "a\xff";
  const auto json = nlohmann::json::parse(render_json(build_report(run)));
  CHECK(json.at(0).at("name") == "a\xef\xbf\xbd");
}

TEST_CASE("a run still being written reads as running, and one whose writer died says it did not complete",
          "[report]") {
  RunRecord run;
  run.complete = false;
  run.status = "running";
  run.cases_planned = 8;
  run.last_update = "2026-11-25T10:00:00+0000";
  run.cases = {timed_case(0, "parallel", 2, 5, 0.1), timed_case(1, "parallel", 2, 5, 0.2)};
  const auto rows = report_no_stragglers(run);
  run.being_written = true;
  const std::string live = render_table("f.h5", run, rows, true);
  CHECK(live.find("\nrunning: 2 of 8 case(s) finished so far, last update 2026-11-25T10:00:00+0000\n") !=
        std::string::npos);
  CHECK(live.find("WARNING") == std::string::npos);
  run.being_written = false;
  CHECK(render_table("f.h5", run, rows, true)
            .find("\nWARNING: the run did not complete (status: running, but no process holds its write lock: the "
                  "writer died, or runs on another machine); incomplete: 2 of 8 case(s) below, last update "
                  "2026-11-25T10:00:00+0000\n") != std::string::npos);
  run.status = "aborted: SIGTERM during case 2 (g)";
  CHECK(render_table("f.h5", run, rows, true)
            .find("\nWARNING: the run did not complete (status: aborted: SIGTERM during case 2 (g)); incomplete: 2 of "
                  "8 case(s) below, last update 2026-11-25T10:00:00+0000\n") != std::string::npos);
  run.complete = true;
  run.status = "complete";
  run.being_written = true;  // finished, not yet closed
  CHECK(render_table("f.h5", run, rows, true).find("running") == std::string::npos);
}
