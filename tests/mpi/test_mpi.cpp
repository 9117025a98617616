// Run under mpiexec -n 2 and -n 4: the communicator, the common clock and
// the two modes, checked on the gathered results.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>

#include "app/run_metadata.hpp"
#include "comm/clock_sync.hpp"
#include "comm/mpi_communicator.hpp"
#include "comm/mpi_library.hpp"
#include "common/case_tables.hpp"
#include "common/forwarding_device.hpp"
#include "core/clock.hpp"
#include "core/config.hpp"
#include "core/plan.hpp"
#include "device/cpu_device.hpp"
#include "runner/runner.hpp"
#include "workloads/workload.hpp"

using namespace gpuscale;

TEST_CASE("Open MPI's selected point-to-point layer is read back after MPI_Init, other libraries have none",
          "[mpi][mpi_library]") {
  const std::string pml = open_mpi_selected_pml();
  if (mpi_library_version().find("Open MPI") != std::string::npos) {
    INFO("pml: '" << pml << "'");
    CHECK((pml == "ob1" || pml == "ucx" || pml == "cm"));
  } else {
    CHECK(pml.empty());
  }
}

TEST_CASE("every rank knows where it is (all on one node here)", "[mpi]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  int world = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  CHECK(comm.size() == world);
  CHECK(comm.node_count() == 1);
  CHECK(comm.node_index() == 0);
  CHECK(comm.local_rank() == comm.rank());
  CHECK(comm.local_size() == comm.size());
  CHECK_FALSE(comm.hostname().empty());
}

TEST_CASE("gather brings every rank's values to rank 0 in rank order", "[mpi]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  const int r = comm.rank();
  // Ranks send different lengths: rank r sends r+1 values r*10, r*10+1, ...
  std::vector<double> mine;
  for (int i = 0; i <= r; ++i) mine.push_back(r * 10 + i);
  const auto all = comm.gather(mine);
  const auto names = comm.gather("rank" + std::string(r, 'x'));
  const auto ints = comm.gather(r * r);
  if (r == 0) {
    std::vector<double> want;
    for (int q = 0; q < comm.size(); ++q) {
      for (int i = 0; i <= q; ++i) want.push_back(q * 10 + i);
    }
    CHECK(all == want);
    REQUIRE(names.size() == static_cast<std::size_t>(comm.size()));
    CHECK(names.back() == "rank" + std::string(comm.size() - 1, 'x'));
    CHECK(ints.back() == (comm.size() - 1) * (comm.size() - 1));
  } else {
    CHECK(all.empty());
  }
  CHECK(comm.broadcast(std::string(r == 0 ? "from root" : "other")) == "from root");
  CHECK(comm.broadcast(r == 0 ? 2.5 : -1.0) == 2.5);
  CHECK(comm.any(r == comm.size() - 1));
  CHECK_FALSE(comm.any(false));
}

TEST_CASE("ranks on rank 0's node share its clock: offset 0 by construction", "[mpi][clock]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  const ClockOffset o = estimate_clock_offset(comm);
  CHECK(o.shared);
  CHECK(o.offset_s == 0.0);
  CHECK(o.uncertainty_s == 0.0);
}

TEST_CASE("the ping-pong estimate on one host is zero within its stated uncertainty", "[mpi][clock]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  ClockSyncOptions opt;
  opt.share_node_clock = false;  // estimate even where the clock is shared
  const ClockOffset o = estimate_clock_offset(comm, opt);
  // Same machine, same steady clock: the true offset is 0, and the estimate is
  // off by at most half the round trip it kept.
  CHECK(o.shared == (comm.rank() == 0));
  CHECK(o.uncertainty_s >= 0.0);
  CHECK(std::fabs(o.offset_s) <= o.uncertainty_s + 1e-9);
  if (comm.rank() == 0) CHECK(o.offset_s == 0.0);
  CHECK(o.uncertainty_s < 0.05);  // a least-delay round trip on one host is well under 100 ms
  if (comm.rank() != 0) CHECK(o.rounds >= opt.min_rounds);
}

TEST_CASE("the ping-pong goes on past its minimum until the round trip is small or the budget spent",
          "[mpi][clock]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  ClockSyncOptions opt;
  opt.share_node_clock = false;
  opt.min_rounds = 3;
  opt.target_rtt_s = 0.0;  // never small enough: the budget decides
  opt.budget_s = 0.05 * (comm.size() - 1);
  const double t0 = MPI_Wtime();
  const ClockOffset o = estimate_clock_offset(comm, opt);
  const double took = MPI_Wtime() - t0;
  if (comm.rank() != 0) {
    CHECK(o.rounds > opt.min_rounds);
    CHECK(std::fabs(o.offset_s) <= o.uncertainty_s + 1e-9);
  }
  if (comm.rank() == 0) CHECK(took >= 0.05 * (comm.size() - 1));  // each peer's share of the budget
  CHECK(took < 5.0);

  opt.target_rtt_s = 10.0;  // any round trip will do: the minimum decides
  const ClockOffset quick = estimate_clock_offset(comm, opt);
  if (comm.rank() != 0) CHECK(quick.rounds == opt.min_rounds);
}

namespace {
struct Run {
  CaseRecord rec;
  // Two ranks' timestamps compare within the sum of their clocks' offset
  // uncertainties: the ones the run's clock was built with, not a later estimate.
  double slack = 0.0;
};

Run run_case(const MpiCommunicator& comm, const std::string& mode, int reps) {
  const Config cfg = parse_config("[[experiment]]\nname = \"t\"\nworkload = \"gemm\"\nsize = 48\nops = 3\nwarmup = 1\n"
                                  "reps = " + std::to_string(reps) + "\nmodes = [\"" + mode + "\"]\n",
                                  "t.toml", {}, workload_schemas());
  const Case c = expand(cfg).at(0);
  CpuDevice dev;
  CommonClock clock(comm);
  Runner runner(comm, dev, nullptr, clock, Backend::cpu, 42);
  Run run{runner.run(c)};
  const auto all = comm.gather(std::vector<double>{clock.offset().uncertainty_s});
  run.slack = 2 * (all.empty() ? 0.0 : *std::max_element(all.begin(), all.end())) + 1e-6;
  return run;
}
}  // namespace

TEST_CASE("serial mode: ranks take turns and rank r starts after rank r-1 ends", "[mpi][modes]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  const int reps = 4;
  const auto [rec, slack] = run_case(comm, "serial", reps);
  if (comm.rank() != 0) return;
  const int n = comm.size();
  REQUIRE(rec.device_time_s.size() == static_cast<std::size_t>(n * reps));
  CHECK(rec.status == CaseStatus::ok);
  for (int r = 1; r < n; ++r) {
    const double prev_end = rec.wall_end_s[(r - 1) * reps + reps - 1];
    const double first_start = rec.wall_start_s[r * reps];
    CHECK(first_start >= prev_end - slack);
  }
  for (std::size_t i = 0; i < rec.wall_start_s.size(); ++i) {
    CHECK(rec.wall_end_s[i] >= rec.wall_start_s[i]);
    CHECK(rec.device_time_s[i] > 0.0);
  }
}

TEST_CASE("parallel mode: each sample starts on every rank after all ranks ended the previous one", "[mpi][modes]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  const int reps = 5;
  const auto [rec, slack] = run_case(comm, "parallel", reps);
  if (comm.rank() != 0) return;
  const int n = comm.size();
  REQUIRE(rec.wall_start_s.size() == static_cast<std::size_t>(n * reps));
  CHECK(rec.ranks == n);
  CHECK(rec.verify_error.size() == static_cast<std::size_t>(n));
  for (int i = 1; i < reps; ++i) {
    double prev_end = 0.0, start = 1e300;
    for (int r = 0; r < n; ++r) {
      prev_end = std::max(prev_end, rec.wall_end_s[r * reps + i - 1]);
      start = std::min(start, rec.wall_start_s[r * reps + i]);
    }
    CHECK(start >= prev_end - slack);
  }
}

namespace {
CaseRecord run_warmup_case(const MpiCommunicator& comm, const std::string& mode, const std::string& warmup_keys) {
  const Config cfg = parse_config("[[experiment]]\nname = \"w\"\nworkload = \"gemm\"\nsize = 32\nops = 2\nreps = 3\n" +
                                      warmup_keys + "modes = [\"" + mode + "\"]\n",
                                  "w.toml", {}, workload_schemas());
  CpuDevice dev;
  CommonClock clock(comm);
  Runner runner(comm, dev, nullptr, clock, Backend::cpu, 42);
  return runner.run(expand(cfg).at(0));
}
}  // namespace

TEST_CASE("warm-up runs at least `warmup` samples for at least `warmup_s`, and ranks together stop together",
          "[mpi][warmup]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  const int n = comm.size();
  // Every rank runs the three cases (they are collective); rank 0 checks what was gathered.
  const double t0 = clock_now();
  const CaseRecord by_time = run_warmup_case(comm, "parallel", "warmup = 2\nwarmup_s = 0.15\n");
  const double took = clock_now() - t0;
  const CaseRecord by_count = run_warmup_case(comm, "serial", "warmup = 3\n");
  const CaseRecord none = run_warmup_case(comm, "parallel", "warmup = 0\nwarmup_s = 0\n");
  CHECK(took >= 0.15);
  if (comm.rank() != 0) return;

  INFO("by time, in parallel: every rank ran the same number, well over the count");
  REQUIRE(by_time.warmup_samples.size() == static_cast<std::size_t>(n));
  CHECK(by_time.warmup_samples[0] > 2);  // a 32x32 gemm takes microseconds: time, not the count, ended it
  for (auto s : by_time.warmup_samples) CHECK(s == by_time.warmup_samples[0]);
  CHECK(by_time.params.get_double("warmup_s") == 0.15);
  CHECK(by_time.warmup_width == std::min<std::int64_t>(by_time.warmup_samples[0], 1000));
  REQUIRE(by_time.warmup_device_time_s.size() == static_cast<std::size_t>(n * by_time.warmup_width));
  CHECK(std::all_of(by_time.warmup_device_time_s.begin(), by_time.warmup_device_time_s.end(),
                    [](double t) { return t > 0.0; }));

  INFO("by count only (the CPU backend's default): exactly `warmup` samples on every rank, each timed");
  CHECK(by_count.params.get_double("warmup_s") == 0.0);  // the default that was used is recorded
  CHECK(by_count.warmup_samples == std::vector<std::int64_t>(n, 3));
  REQUIRE(by_count.warmup_width == 3);
  CHECK(std::all_of(by_count.warmup_device_time_s.begin(), by_count.warmup_device_time_s.end(),
                    [](double t) { return t > 0.0; }));

  INFO("none at all");
  CHECK(none.warmup_samples == std::vector<std::int64_t>(n, 0));
  CHECK(none.warmup_width == 0);
  CHECK(none.warmup_device_time_s.empty());
  CHECK(none.status == CaseStatus::ok);
}

TEST_CASE("graph = true: the sample's work is recorded once and every sample replays it, verified", "[mpi][graph]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  const Config cfg = parse_config("[[experiment]]\nname = \"g\"\nworkload = \"gemm\"\nsize = 24\nops = 5\nwarmup = 2\n"
                                  "reps = 4\ngraph = true\nmodes = [\"parallel\"]\n",
                                  "g.toml", {}, workload_schemas());
  testing::RecordingDevice dev;
  CommonClock clock(comm);
  Runner runner(comm, dev, nullptr, clock, Backend::cpu, 42);
  const CaseRecord rec = runner.run(expand(cfg).at(0));
  CHECK(dev.recorded == 5);     // run_sample ran once, into the graph
  CHECK(dev.eager_gemms == 0);  // and never again
  CHECK(dev.replays == 2 + 4);  // one replay per warm-up and timed sample
  if (comm.rank() == 0) {
    CHECK(rec.status == CaseStatus::ok);
    CHECK(rec.params.get_bool("graph"));
  }
}

namespace {
// A GPU that reads 1000 + rank MHz, 40 + rank degrees, and counts its readings.
class FakeGpu final : public TelemetrySource {
 public:
  explicit FakeGpu(int rank) : rank_(rank) {}
  TelemetrySample read() override {
    ++reads;
    TelemetrySample s;
    s.sm_clock_mhz = 1000 + rank_;
    s.temperature_c = 40 + rank_;
    s.clock_event_reasons = 0;
    return s;
  }
  std::atomic<int> reads{0};

 private:
  int rank_;
};
}  // namespace

TEST_CASE("each rank's GPU readings during a case reach rank 0 as one table, within the case's time",
          "[mpi][telemetry]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  const Config cfg = parse_config("[[experiment]]\nname = \"t\"\nworkload = \"gemm\"\nsize = 32\nops = 2\nwarmup = 1\n"
                                  "warmup_s = 0.1\nreps = 3\nmodes = [\"parallel\"]\n",
                                  "t.toml", {}, workload_schemas());
  CpuDevice dev;
  CommonClock clock(comm);
  FakeGpu gpu(comm.rank());
  Runner runner(comm, dev, nullptr, clock, Backend::cpu, 42);
  const double before = clock.now();
  runner.set_telemetry(&gpu, 0.01);
  const CaseRecord rec = runner.run(expand(cfg).at(0));
  runner.set_telemetry(nullptr, 0.0);
  const CaseRecord without = runner.run(expand(cfg).at(0));
  const double after = clock.now();
  // Start and end at least; every 10 ms of at least 0.1 s of warm-up besides on an idle machine (how many is a
  // timing: a loaded machine wakes the sampler late).
  CHECK(gpu.reads >= 2);
  if (comm.rank() != 0) return;
  const CaseTable& t = testing::table_of(rec, kTelemetryTable);
  CHECK(t.attr("interval") == 0.01);
  const auto col = columns_of(t, {{"rank", ColumnType::integer},
                                  {"time", ColumnType::real},
                                  {"sm_clock", ColumnType::real},
                                  {"mem_clock", ColumnType::real},
                                  {"temperature", ColumnType::real},
                                  {"power", ColumnType::real},
                                  {"clock_event_reasons", ColumnType::integer}});
  REQUIRE(col.size() == 7);
  CHECK(col[1]->common_clock);  // moved with its rank's clock estimate
  const auto &rank = col[0]->ints, &reasons = col[6]->ints;
  const auto &time = col[1]->reals, &sm_clock = col[2]->reals, &temperature = col[4]->reals, &power = col[5]->reals;
  REQUIRE(t.rows() >= static_cast<std::size_t>(comm.size()) * 2);
  for (int r = 0; r < comm.size(); ++r) CHECK(std::count(rank.begin(), rank.end(), r) >= 2);
  for (std::size_t i = 0; i < t.rows(); ++i) {
    CHECK(sm_clock[i] == 1000 + rank[i]);
    CHECK(temperature[i] == 40 + rank[i]);
    CHECK(std::isnan(power[i]));  // not readable: NaN, as the fake said
    CHECK(reasons[i] == 0);
    // On the common clock, within the run (the ranks' clocks agree within microseconds here).
    CHECK(time[i] >= before - 1e-3);
    CHECK(time[i] <= after + 1e-3);
    if (i > 0 && rank[i] == rank[i - 1]) CHECK(time[i] > time[i - 1]);
  }
  // The last reading of each rank comes after its last timed sample ended.
  for (int r = 0; r < comm.size(); ++r) {
    double last = -1e300;
    for (std::size_t i = 0; i < t.rows(); ++i) {
      if (rank[i] == r) last = std::max(last, time[i]);
    }
    CHECK(last >= rec.wall_end_s[static_cast<std::size_t>(r) * rec.reps + rec.reps - 1] - 1e-3);
  }
  // Without a telemetry source: no readings, so no table (nor its interval).
  CHECK(find_table(without.tables, kTelemetryTable) == nullptr);
}

TEST_CASE("pipeline phases in the file: inside their sample, and overlapping exactly when overlap = true",
          "[mpi][pipeline]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  for (const bool overlap : {true, false}) {
    const Config cfg = parse_config(std::string("[[experiment]]\nname = \"p\"\nworkload = \"pipeline\"\nsize = 64\n"
                                                "ops = 4\nwarmup = 1\nreps = 3\nmodes = [\"parallel\"]\noverlap = ") +
                                        (overlap ? "true" : "false") + "\n",
                                    "p.toml", {}, workload_schemas());
    testing::HandshakeDevice dev(4);  // makes the overlap deterministic (see its comment)
    CommonClock clock(comm);
    Runner runner(comm, dev, nullptr, clock, Backend::cpu, 42);
    const CaseRecord rec = runner.run(expand(cfg).at(0));
    CHECK(dev.timed_out == !overlap);
    if (comm.rank() != 0) continue;
    INFO("overlap = " << overlap);
    CHECK(rec.status == CaseStatus::ok);
    const testing::PhaseRows p = testing::phase_rows(rec);
    REQUIRE(p.names == std::vector<std::string>{"compute", "transfer"});
    REQUIRE(p.size() == static_cast<std::size_t>(comm.size() * 3 * 8));  // ranks x reps x (4 matmuls + 4 copies)
    int overlapping = 0;
    for (std::size_t i = 0; i < p.size(); ++i) {
      const std::size_t at = static_cast<std::size_t>(p.rank[i] * rec.reps + p.sample[i]);
      CHECK(p.end_s[i] >= p.start_s[i]);
      CHECK(p.start_s[i] >= rec.wall_start_s[at]);
      CHECK(p.end_s[i] <= rec.wall_end_s[at]);
      if (p.phase[i] != 0) continue;
      for (std::size_t j = 0; j < p.size(); ++j) {
        overlapping += p.phase[j] == 1 && p.rank[j] == p.rank[i] && p.sample[j] == p.sample[i] &&
                       p.start_s[j] < p.end_s[i] && p.start_s[i] < p.end_s[j];
      }
    }
    if (overlap) {
      CHECK(overlapping >= comm.size() * 3 * 3);  // copy i inside matmul i+1, every rank and sample
    } else {
      CHECK(overlapping == 0);
    }
  }
}
