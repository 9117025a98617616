// The result file: what is written is read back unchanged, a file that was
// never finished says so, and an existing file is not overwritten.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "core/error.hpp"
#include "io/result_reader.hpp"
#include "io/result_writer.hpp"

using namespace gpuscale;
namespace fs = std::filesystem;

namespace {
std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("gpuscale-test-" + std::to_string(getpid()) + "-" + name)).string();
}

RunRecord sample_run() {
  RunRecord run;
  run.software_version = "0.1.0+gtest";
  run.date = "2026-11-22T07:00:00+0000";
  run.software_dependencies = "openmpi@4.1.4;hdf5@1.10.8";
  run.mpi_library = "Open MPI v4.1.4, package: Debian OpenMPI";
  run.mpi_settings = {{"coll", ""}, {"coll_tuned_priority", "30"}, {"btl_tcp_eager_limit", "65536"}};
  run.command_line = "gpuscale run x.toml";
  run.config_file = "x.toml";
  run.config_text = "[[experiment]]\nworkload = \"gemm\"\n";
  run.backend = Backend::cpu;
  run.backend_reason = "backend \"cpu\" requested";
  run.environment = {{"OMPI_COMM_WORLD_SIZE", "2"}, {"SLURM_JOB_ID", "17"}};
  run.nodes = 1;
  for (int r = 0; r < 2; ++r) {
    RankRecord rr;
    rr.hostname = "node" + std::to_string(r);
    rr.node_index = r;
    rr.local_rank = 0;
    rr.local_size = 1;
    rr.pid = 100 + r;
    rr.device_kind = "cpu";
    rr.device_name = "Test CPU";
    rr.clock_offset_start_s = r * 1e-6;
    rr.clock_uncertainty_start_s = 2e-7;
    rr.clock_offset_end_s = std::nan("");
    rr.clock_uncertainty_end_s = std::nan("");
    run.ranks.push_back(rr);
  }
  return run;
}

CaseRecord sample_case(std::size_t index, const std::string& mode) {
  CaseRecord c;
  c.index = index;
  c.experiment = "gemm-512";
  c.workload = "gemm";
  c.mode = *parse_mode(mode);
  c.backend = Backend::cpu;
  c.status = CaseStatus::ok;
  c.ranks = 2;
  c.nodes = 1;
  c.reps = 3;
  c.warmup = 1;
  c.params.set("reps", std::int64_t{3});
  c.params.set("size", std::int64_t{512});
  c.params.set("dtype", std::string("fp64"));
  c.params.set("scale", 0.5);
  c.flops_per_sample = 2.0 * 512 * 512 * 512;
  c.bytes_per_sample = 3.0 * 512 * 512 * 8;
  c.note = "a note";
  c.device_time_s = {1, 2, 3, 4, 5, 6};
  c.enqueue_s = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6};
  c.wall_start_s = {0, 1, 2, 0, 1, 2};
  c.wall_end_s = {0.5, 1.5, 2.5, 0.6, 1.6, 2.6};
  c.verify_error = {1e-16, 2e-16};
  c.verify_tolerance = 1e-13;
  return c;
}

// The runner's phases table as it comes out of merge_rank_tables: rank, sample, phase (an index into the levels
// "names"), start, end on the common clock.
CaseTable phases_table(std::vector<std::string> names, std::vector<std::int64_t> rank, std::vector<std::int64_t> sample,
                       std::vector<std::int64_t> phase, std::vector<double> start, std::vector<double> end) {
  CaseTable t;
  t.name = kPhasesTable;
  t.columns = {int_column("rank", "the world rank whose row it is", ColumnRange::rank),
               int_column("sample", "the timed sample", ColumnRange::sample),
               int_column("phase", "the phase, an index into names", ColumnRange::level),
               clock_column("start", "interval start on the common clock"),
               clock_column("end", "interval end on the common clock")};
  t.columns[0].ints = std::move(rank);
  t.columns[1].ints = std::move(sample);
  t.columns[2].ints = std::move(phase);
  t.columns[2].levels = std::move(names);
  t.columns[2].levels_name = "names";
  t.columns[3].reals = std::move(start);
  t.columns[4].reals = std::move(end);
  return t;
}

// The runner's telemetry table of two readings of rank 0's GPU.
CaseTable telemetry_table(double interval_s) {
  CaseTable t;
  t.name = kTelemetryTable;
  t.attrs = {{"interval", interval_s}};
  t.columns = {int_column("rank", "the world rank whose row it is", ColumnRange::rank),
               clock_column("time", "when the reading was taken, on the common clock"),
               real_column("sm_clock", "MHz", "SM clock (NaN: not readable)"),
               real_column("mem_clock", "MHz", "memory clock (NaN: not readable)"),
               real_column("temperature", "degC", "GPU temperature (NaN: not readable)"),
               real_column("power", "W", "power draw (NaN: not readable)"),
               int_column("clock_event_reasons", "NVML's clock event reasons bitmask; -1: not readable")};
  t.columns[2].unit_si = t.columns[3].unit_si = 1e6;
  t.columns[0].ints = {0, 0};
  t.columns[1].reals = {0.0, 0.05};
  t.columns[2].reals = {345, 1980};
  t.columns[3].reals = {2619, 2619};
  t.columns[4].reals = {30, 41};
  t.columns[5].reals = {70.5, std::nan("")};
  t.columns[6].ints = {1, -1};
  return t;
}

// The column of the case's table (a failed check when either is missing).
const TableColumn& column_of(const CaseRecord& c, const std::string& table, const std::string& column) {
  const CaseTable* t = find_table(c.tables, table);
  REQUIRE(t != nullptr);
  const TableColumn* col = t->column(column);
  REQUIRE(col != nullptr);
  return *col;
}
}  // namespace

TEST_CASE("a result file round-trips every field", "[hdf5]") {
  const std::string path = temp_path("roundtrip.h5");
  fs::remove(path);
  const RunRecord run = sample_run();
  std::vector<RankRecord> end = run.ranks;
  end[1].clock_offset_end_s = 3e-6;
  end[1].clock_uncertainty_end_s = 1e-7;
  end[0].clock_offset_end_s = end[0].clock_uncertainty_end_s = 0.0;
  {
    ResultWriter w(path, run);
    w.write_case(sample_case(0, "serial"));
    w.write_case(sample_case(1, "parallel"));
    w.finish(true, "complete", end);
  }
  const RunRecord back = read_result_file(path);
  CHECK(back.software == "gpuscale");
  CHECK(back.software_version == run.software_version);
  CHECK(back.date == run.date);
  CHECK(back.schema_version == kSchemaVersion);
  CHECK(back.software_dependencies == run.software_dependencies);
  CHECK(back.mpi_library == run.mpi_library);
  CHECK(back.mpi_settings == run.mpi_settings);
  CHECK(back.command_line == run.command_line);
  CHECK(back.config_text == run.config_text);
  CHECK(back.backend_reason == run.backend_reason);
  CHECK(back.environment == run.environment);
  CHECK(back.complete);
  CHECK(back.status == "complete");
  REQUIRE(back.ranks.size() == 2);
  CHECK(back.ranks[1].hostname == "node1");
  CHECK(back.ranks[1].node_index == 1);
  CHECK(back.ranks[1].pid == 101);
  CHECK(back.ranks[1].clock_offset_start_s == 1e-6);
  CHECK(back.ranks[1].clock_offset_end_s == 3e-6);
  REQUIRE(back.cases.size() == 2);
  const CaseRecord want = sample_case(1, "parallel");
  const CaseRecord& got = back.cases[1];
  CHECK(got.index == 1);
  CHECK(got.mode == Mode::parallel);
  CHECK(got.params == want.params);  // order and types kept: int, string, double
  CHECK(got.device_time_s == want.device_time_s);
  CHECK(got.enqueue_s == want.enqueue_s);
  CHECK(got.note == "a note");
  // Rank 1's end estimate (uncertainty 0.1 us) is better than its start one (0.2 us): its times were moved
  // from the start offset (1 us) onto the end one (3 us), 2 us earlier; rank 0's stay.
  CHECK(back.ranks[0].clock_offset_applied_s == 0.0);
  CHECK(back.ranks[1].clock_offset_applied_s == 3e-6);
  CHECK(back.ranks[1].clock_uncertainty_applied_s == 1e-7);
  for (std::size_t i = 0; i < want.wall_start_s.size(); ++i) {
    const double shift = i < 3 ? 0.0 : -2e-6;
    CHECK(got.wall_start_s[i] == Approx(want.wall_start_s[i] + shift).margin(1e-12));
    CHECK(got.wall_end_s[i] == Approx(want.wall_end_s[i] + shift).margin(1e-12));
  }
  CHECK(got.verify_error == want.verify_error);
  CHECK(got.flops_per_sample == want.flops_per_sample);
  fs::remove(path);
}

TEST_CASE("a run that never finished reads back as incomplete with its finished cases", "[hdf5]") {
  const std::string path = temp_path("partial.h5");
  fs::remove(path);
  {
    ResultWriter w(path, sample_run());
    w.write_case(sample_case(0, "serial"));
    // destroyed without finish(): as if the job ended here
  }
  const RunRecord back = read_result_file(path);
  CHECK_FALSE(back.complete);
  CHECK(back.status == "running");
  CHECK(back.cases.size() == 1);
  CHECK(std::isnan(back.ranks[0].clock_offset_end_s));
  CHECK(back.ranks[1].clock_offset_applied_s == 1e-6);  // the start estimate: the end one never came
  CHECK(back.cases[0].wall_start_s == sample_case(0, "serial").wall_start_s);
  fs::remove(path);
}

TEST_CASE("a worse end estimate leaves the times on the start one, phases and telemetry move with wall times",
          "[hdf5][clock]") {
  const std::string path = temp_path("clock.h5");
  fs::remove(path);
  RunRecord run = sample_run();
  std::vector<RankRecord> end = run.ranks;
  end[0].clock_offset_end_s = end[0].clock_uncertainty_end_s = 0.0;
  end[1].clock_offset_end_s = 5e-6;
  end[1].clock_uncertainty_end_s = 4e-7;  // worse than the start's 2e-7
  CaseRecord c = sample_case(0, "parallel");
  c.tables = {phases_table({"compute"}, {0, 1}, {0, 0}, {0, 0}, {1.0, 1.0}, {2.0, 2.0})};
  {
    ResultWriter w(path, run);
    w.write_case(c);
    w.finish(true, "complete", end);
  }
  RunRecord back = read_result_file(path);
  CHECK(back.ranks[1].clock_offset_applied_s == 1e-6);
  CHECK(back.cases[0].wall_start_s == c.wall_start_s);
  fs::remove(path);

  end[1].clock_uncertainty_end_s = 1e-8;  // now better: rank 1 moves 4 us earlier, phases too
  {
    ResultWriter w(path, run);
    w.write_case(c);
    w.finish(true, "complete", end);
  }
  back = read_result_file(path);
  CHECK(back.ranks[1].clock_offset_applied_s == 5e-6);
  const auto& start = column_of(back.cases[0], kPhasesTable, "start").reals;
  CHECK(start[0] == 1.0);
  CHECK(start[1] == Approx(1.0 - 4e-6).margin(1e-12));
  CHECK(column_of(back.cases[0], kPhasesTable, "end").reals[1] == Approx(2.0 - 4e-6).margin(1e-12));
  CHECK(back.cases[0].wall_end_s[3] == Approx(c.wall_end_s[3] - 4e-6).margin(1e-12));
  fs::remove(path);
}

TEST_CASE("an existing file is never written over: the writer only creates new files", "[hdf5]") {
  const std::string path = temp_path("exists.h5");
  fs::remove(path);
  {
    ResultWriter w(path, sample_run());
    w.write_case(sample_case(0, "serial"));
    w.close();
  }
  const auto size = fs::file_size(path);
  CHECK_THROWS_AS(ResultWriter(path, sample_run()), RuntimeError);
  CHECK(fs::file_size(path) == size);
  CHECK(read_result_file(path).cases.size() == 1);
  fs::remove(path);
}

TEST_CASE("reading something that is not a result file says so", "[hdf5][errors]") {
  CHECK_THROWS_WITH(read_result_file("/nonexistent.h5"), "/nonexistent.h5: no such file");
  const std::string path = temp_path("text.h5");
  { std::FILE* f = std::fopen(path.c_str(), "w"); std::fputs("hello", f); std::fclose(f); }
  CHECK_THROWS_WITH(read_result_file(path), path + ": not an HDF5 file");
  fs::remove(path);
}

TEST_CASE("warm-up samples, GPU facts, links and telemetry round-trip with their units", "[hdf5][telemetry]") {
  const std::string path = temp_path("gpu.h5");
  fs::remove(path);
  RunRecord run = sample_run();
  run.ranks[0].telemetry = "nvml";
  run.ranks[0].max_sm_clock_mhz = 1980;
  run.ranks[0].power_limit_w = 700;
  run.ranks[0].pcie_gen = 5;
  run.ranks[0].pcie_width = 16;
  run.ranks[0].nvlinks_active = 18;
  run.ranks[0].numa_node = 1;
  run.ranks[0].local_cpulist = "0-15";
  run.ranks[1].telemetry = "not available: the CPU backend has no GPU telemetry";
  run.links = {{0, "0000:1b:00.0", 18, "node"}, {0, "0000:3b:00.0", 0, "system"}};
  run.warnings = {"node a: 3 ranks on 2 cores", "second line"};
  run.ranks[0].clock_shared = true;
  run.ranks[0].cpu_affinity = "0-3,8";
  run.ranks[0].cores_available = 5;
  run.ranks[0].node_cores = 16;
  run.ranks[0].cuda_visible_devices = "2,3";
  CaseRecord c = sample_case(0, "parallel");
  c.warmup_samples = {3, 1};
  c.warmup_width = 3;
  c.warmup_device_time_s = {0.3, 0.2, 0.1, 0.4, std::nan(""), std::nan("")};
  c.tables = {telemetry_table(0.05)};
  CaseRecord bare = sample_case(1, "parallel");  // no warm-up, no telemetry
  bare.warmup_samples = {0, 0};
  {
    ResultWriter w(path, run);
    w.write_case(c);
    w.write_case(bare);
    w.finish(true, "complete", run.ranks);
  }
  const RunRecord back = read_result_file(path);
  CHECK(back.ranks[0].telemetry == "nvml");
  CHECK(back.ranks[0].max_sm_clock_mhz == 1980);
  CHECK(std::isnan(back.ranks[0].max_mem_clock_mhz));
  CHECK(back.ranks[0].power_limit_w == 700);
  CHECK(back.ranks[0].pcie_gen == 5);
  CHECK(back.ranks[0].pcie_max_gen == -1);
  CHECK(back.ranks[0].nvlinks_active == 18);
  CHECK(back.ranks[0].numa_node == 1);
  CHECK(back.ranks[0].local_cpulist == "0-15");
  CHECK(back.ranks[1].telemetry == "not available: the CPU backend has no GPU telemetry");
  CHECK(back.warnings == run.warnings);
  CHECK(back.ranks[0].clock_shared);
  CHECK_FALSE(back.ranks[1].clock_shared);
  CHECK(back.ranks[0].cpu_affinity == "0-3,8");
  CHECK(back.ranks[0].cores_available == 5);
  CHECK(back.ranks[0].node_cores == 16);
  CHECK(back.ranks[0].cuda_visible_devices == "2,3");
  REQUIRE(back.links.size() == 2);
  CHECK(back.links[0].peer_pci_bus_id == "0000:1b:00.0");
  CHECK(back.links[0].nvlinks == 18);
  CHECK(back.links[1].common_ancestor == "system");
  const CaseRecord& got = back.cases[0];
  CHECK(got.warmup_samples == c.warmup_samples);
  REQUIRE(got.warmup_width == 3);
  CHECK(got.warmup_device_time_s[3] == 0.4);
  CHECK(std::isnan(got.warmup_device_time_s[5]));
  const CaseTable& want = c.tables[0];
  REQUIRE(find_table(got.tables, kTelemetryTable) != nullptr);
  CHECK(find_table(got.tables, kTelemetryTable)->attr("interval") == 0.05);
  CHECK(column_of(got, kTelemetryTable, "rank").ints == want.column("rank")->ints);
  CHECK(column_of(got, kTelemetryTable, "sm_clock").reals == want.column("sm_clock")->reals);
  CHECK(column_of(got, kTelemetryTable, "sm_clock").unit == "MHz");
  CHECK(column_of(got, kTelemetryTable, "sm_clock").unit_si == 1e6);
  CHECK(column_of(got, kTelemetryTable, "clock_event_reasons").ints == want.column("clock_event_reasons")->ints);
  CHECK(std::isnan(column_of(got, kTelemetryTable, "power").reals[1]));
  CHECK(back.cases[1].warmup_width == 0);
  CHECK(back.cases[1].tables.empty());
  fs::remove(path);
}

// ---- Checksums, validation, old files ----

#include <fcntl.h>

#include <fstream>
#include <iterator>

#include "io/hdf5_io.hpp"

namespace {

// A finished file of one run (sample_run) with the given cases.
void write_file(const std::string& path, const std::vector<CaseRecord>& cases) {
  fs::remove(path);
  const RunRecord run = sample_run();
  ResultWriter w(path, run);
  for (const auto& c : cases) w.write_case(c);
  w.finish(true, "complete", run.ranks);
}

// Opens `path` for writing and hands /cases/0000 (or the root with case = false) to `edit`.
template <class F>
void edit_file(const std::string& path, F&& edit, bool in_case = true) {
  hdf5_quiet();
  H5Id f(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
  REQUIRE(f.get() >= 0);
  if (!in_case) return edit(f.get());
  H5Id g(H5Gopen2(f.get(), "cases/0000", H5P_DEFAULT), H5Gclose);
  REQUIRE(g.get() >= 0);
  edit(g.get());
}

// The message read_result_file throws for `path` ("" when it reads).
std::string read_error(const std::string& path) {
  try {
    read_result_file(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void put_bytes(const std::string& path, const std::string& b) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << b;
}

// New values for an integer dataset, written in place as a writer would write them: its attributes stay, its digest
// follows the values (the values are wrong, not misplaced).
void overwrite_ints(hid_t g, const char* name, const std::vector<std::int64_t>& v) { h5::overwrite_ints(g, name, v); }

// A case with `reps` samples per rank (2 ranks): distinct, increasing times.
CaseRecord big_case(int reps) {
  CaseRecord c = sample_case(0, "parallel");
  c.reps = reps;
  c.params.set("reps", std::int64_t{reps});
  const std::size_t n = 2 * static_cast<std::size_t>(reps);
  c.device_time_s.resize(n);
  c.enqueue_s.resize(n);
  c.wall_start_s.resize(n);
  c.wall_end_s.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i % reps);
    c.device_time_s[i] = 1e-3 * (1 + (i * 7919) % 1000);
    c.enqueue_s[i] = 1e-5 * (1 + i % 13);
    c.wall_start_s[i] = t;
    c.wall_end_s[i] = t + c.device_time_s[i];
  }
  return c;
}

}  // namespace

TEST_CASE("a case's limits (expect) round-trip as attributes expect.<name>", "[hdf5]") {
  const std::string path = temp_path("expect.h5");
  CaseRecord c = sample_case(0, "serial");
  c.expect = {{"min_gflops_per_rank", 50.0}, {"max_median_s", 0.25}};
  CaseRecord none = sample_case(1, "parallel");
  write_file(path, {c, none});
  const RunRecord back = read_result_file(path);
  REQUIRE(back.cases.size() == 2);
  CHECK(back.cases[0].expect == c.expect);  // in the order written
  CHECK(back.cases[1].expect.empty());
  CHECK(back.schema_version == kSchemaVersion);
  fs::remove(path);
}

TEST_CASE("bytes that are not UTF-8 (a path, the environment) are stored as text, each such byte written as backslash, x and two hex digits", "[hdf5]") {
  const std::string path = temp_path("utf8.h5");
  fs::remove(path);
  RunRecord run = sample_run();
  run.command_line = "gpuscale run -o r\xff\xfe.h5 x.toml";
  run.environment = {{"OMPI_X", "caf\xc3\xa9 \xc3"}};  // valid UTF-8, then a sequence cut short
  run.ranks[1].hostname = "n\x80" "de";
  {
    ResultWriter w(path, run);
    w.close();
  }
  const RunRecord back = read_result_file(path);
  CHECK(back.command_line == "gpuscale run -o r\\xFF\\xFE.h5 x.toml");
  CHECK(back.environment.at(0).second == "caf\xc3\xa9 \\xC3");
  CHECK(back.ranks[1].hostname == "n\\x80de");
  fs::remove(path);
}

TEST_CASE("large sample datasets are chunked with checksums and read back exactly", "[hdf5][checksum]") {
  const std::string path = temp_path("big.h5");
  // 150000 reps: rows of two chunks each, the second one partial (1 MiB chunks of 131072 values).
  const CaseRecord c = big_case(150000);
  write_file(path, {c, sample_case(1, "serial")});
  {
    hdf5_quiet();
    H5Id f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    H5Id d(H5Dopen2(f.get(), "cases/0000/device_time", H5P_DEFAULT), H5Dclose);
    H5Id dcpl(H5Dget_create_plist(d.get()), H5Pclose);
    CHECK(H5Pget_layout(dcpl.get()) == H5D_CHUNKED);
    unsigned flags = 0;
    std::size_t n = 0;
    CHECK(H5Pget_filter2(dcpl.get(), 0, &flags, &n, nullptr, 0, nullptr, nullptr) == H5Z_FILTER_FLETCHER32);
    H5Id small(H5Dopen2(f.get(), "cases/0001/device_time", H5P_DEFAULT), H5Dclose);
    H5Id small_dcpl(H5Dget_create_plist(small.get()), H5Pclose);
    CHECK(H5Pget_layout(small_dcpl.get()) == H5D_COMPACT);  // inside its checksummed object header
  }
  const RunRecord back = read_result_file(path);
  REQUIRE(back.cases.size() == 2);
  CHECK(back.cases[0].device_time_s == c.device_time_s);
  CHECK(back.cases[0].wall_end_s == c.wall_end_s);
  CHECK(back.cases[1].device_time_s == sample_case(1, "serial").device_time_s);
  // One byte of a value changed: the chunk's checksum says so.
  std::string b = bytes_of(path);
  const double needle = c.device_time_s[140000];
  std::string pattern(reinterpret_cast<const char*>(&needle), sizeof needle);
  std::size_t at = std::string::npos;
  for (std::size_t i = 140000; i < 2 * 150000; i += 1000) {  // a value that occurs once
    const double v = c.device_time_s[i];
    pattern.assign(reinterpret_cast<const char*>(&v), sizeof v);
    at = b.find(pattern);
    if (at != std::string::npos && b.find(pattern, at + 1) == std::string::npos) break;
  }
  REQUIRE(at != std::string::npos);
  const std::string intact = b;
  b[at + 3] = static_cast<char>(b[at + 3] ^ 0x10);
  put_bytes(path, b);
  CHECK(read_error(path) == path + ": damaged result file: checksum mismatch in the values of /cases/0000/device_time");
  // Its sign bit flipped: a negative time, which is damage all the same (the checksums are checked before the
  // values are judged, though the digest read first found them changed).
  b = intact;
  b[at + 7] = static_cast<char>(b[at + 7] ^ 0x80);
  put_bytes(path, b);
  CHECK(read_error(path) == path + ": damaged result file: checksum mismatch in the values of /cases/0000/device_time");
  fs::remove(path);
}

TEST_CASE("a damaged or truncated file is one line: PATH: damaged result file: what was found", "[hdf5][errors]") {
  const std::string path = temp_path("damaged.h5");
  write_file(path, {sample_case(0, "serial")});
  const std::string whole = bytes_of(path);
  SECTION("truncated") {
    put_bytes(path, whole.substr(0, whole.size() / 2));
    CHECK(read_error(path) == path + ": damaged result file: truncated (file is " + std::to_string(whole.size() / 2) +
                                  " bytes, expected " + std::to_string(whole.size()) + ")");
  }
  SECTION("a flipped byte in metadata") {
    // The case's name attribute sits in its object header: the header's checksum no longer matches.
    std::string b = whole;
    const std::size_t at = b.find("gemm-512");
    REQUIRE(at != std::string::npos);
    b[at] = 'G';
    put_bytes(path, b);
    const std::string e = read_error(path);
    CHECK(e.rfind(path + ": damaged result file: checksum mismatch reading ", 0) == 0);
    CHECK(e.find("HDF5 call") == std::string::npos);
    CHECK(e.find(".cpp") == std::string::npos);
  }
  SECTION("an HDF5 file that gpuscale did not write") {
    fs::remove(path);
    H5Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_LATEST);  // superblock 2: the earliest is refused first
    H5Id f(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), H5Fclose);
    f.reset();
    CHECK(read_error(path) == path + ": not a gpuscale result file (no software = \"gpuscale\" attribute)");
  }
  SECTION("an empty file") {
    put_bytes(path, "");
    CHECK(read_error(path) == path + ": not an HDF5 file");
  }
  fs::remove(path);
}

TEST_CASE("what the report relies on is checked: counts, shapes, indices, finite times", "[hdf5][errors]") {
  const std::string path = temp_path("invalid.h5");
  const std::string damaged = path + ": damaged result file: ";
  CaseRecord c = sample_case(0, "serial");
  c.turn = {0, 1};
  c.tables = {phases_table({"compute"}, {0, 1}, {0, 2}, {0, 0}, {0.1, 2.1}, {0.2, 2.2})};
  write_file(path, {c});
  REQUIRE(read_error(path).empty());
  SECTION("an absurd number of reps allocates nothing") {
    edit_file(path, [](hid_t g) { h5::write_attr(g, "reps", std::int64_t{1} << 40); });
    CHECK(read_error(path) == damaged + "/cases/0000: attribute 'reps' is 1099511627776, outside 0..2147483647");
  }
  SECTION("reps that do not match the samples") {
    edit_file(path, [](hid_t g) { h5::write_attr(g, "reps", std::int64_t{5}); });
    CHECK(read_error(path) == damaged + "/cases/0000/device_time holds 6 values, 10 expected");
  }
  SECTION("more ranks than the run has") {
    edit_file(path, [](hid_t g) { h5::write_attr(g, "ranks", std::int64_t{3}); });
    CHECK(read_error(path) == damaged + "/cases/0000: attribute 'ranks' is 3, outside 1..2");
  }
  SECTION("a turn out of range") {
    edit_file(path, [](hid_t g) {
      H5Ldelete(g, "turn", H5P_DEFAULT);
      h5::write_ints(g, "turn", {0, 7});
    });
    CHECK(read_error(path) == damaged + "/cases/0000/turn[1] is 7, outside 0..1");
  }
  SECTION("a phase index out of range") {
    edit_file(path, [](hid_t g) { overwrite_ints(g, "phases/phase", {0, 1}); });
    CHECK(read_error(path) == damaged + "/cases/0000/phases/phase[1] is 1, outside 0..0");
  }
  SECTION("a sample time that is not finite") {
    edit_file(path, [](hid_t g) {
      std::vector<double> v = sample_case(0, "serial").wall_start_s;
      v[4] = NAN;
      h5::overwrite_doubles(g, "wall_start", v);
    });
    CHECK(read_error(path) == damaged + "/cases/0000/wall_start[4] is not finite");
  }
  SECTION("a sample that ends before it starts") {
    edit_file(path, [](hid_t g) {
      std::vector<double> v = sample_case(0, "serial").wall_end_s;
      v[1] = 0.5;
      h5::overwrite_doubles(g, "wall_end", v);
    });
    CHECK(read_error(path) == damaged + "/cases/0000/wall_end[1] is before its wall_start");
  }
  SECTION("a mode the report does not know") {
    edit_file(path, [](hid_t g) { h5::write_attr(g, "mode", std::string("sideways")); });
    CHECK(read_error(path) == damaged + "/cases/0000: attribute 'mode' is 'sideways', neither serial nor parallel");
  }
  SECTION("an MPI setting that is no NAME=VALUE") {
    edit_file(path, [](hid_t f) { h5::write_attr(f, "mpiSettings", std::string("coll=\nbtl_tcp_flags\n")); }, false);
    CHECK(read_error(path) == damaged + "/: attribute 'mpiSettings' has the line 'btl_tcp_flags', not NAME=VALUE");
  }
  SECTION("a backend the report does not know") {
    edit_file(path, [](hid_t g) { h5::write_attr(g, "backend", std::string("rocm")); });
    CHECK(read_error(path) == damaged + "/cases/0000: attribute 'backend' is 'rocm', neither cpu nor cuda");
  }
  SECTION("a missing attribute") {
    edit_file(path, [](hid_t g) { H5Adelete(g, "note"); });
    CHECK(read_error(path) == damaged + "attribute 'note' of /cases/0000 missing");
  }
  SECTION("a count parameter that is not an integer") {
    edit_file(path, [](hid_t g) {
      H5Id p(H5Gopen2(g, "parameters", H5P_DEFAULT), H5Gclose);
      h5::write_attr(p.get(), "iters", std::string("five"));
    });
    CHECK(read_error(path) == damaged + "/cases/0000/parameters: attribute 'iters' is not a count");
  }
  SECTION("a string that is not UTF-8 (as another writer may store it)") {
    edit_file(path, [](hid_t g) {
      H5Adelete(g, "name");
      H5Id t(H5Tcopy(H5T_C_S1), H5Tclose);
      H5Tset_size(t.get(), 5);
      H5Id space(H5Screate(H5S_SCALAR), H5Sclose);
      H5Id a(H5Acreate2(g, "name", t.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
      H5Awrite(a.get(), t.get(), "gemm\xff");
    });
    CHECK(read_error(path) == damaged + "attribute 'name' of /cases/0000 is not valid UTF-8 (byte 4)");
  }
  SECTION("a rank table whose columns differ in length") {
    edit_file(
        path,
        [](hid_t f) {
          H5Ldelete(f, "ranks/pid", H5P_DEFAULT);
          H5Id r(H5Gopen2(f, "ranks", H5P_DEFAULT), H5Gclose);
          h5::write_ints(r.get(), "pid", {1});
        },
        false);
    CHECK(read_error(path) == damaged + "/ranks/pid holds 1 values, 2 expected");
  }
  fs::remove(path);
}

TEST_CASE("a file in HDF5's earliest format is refused before the library reads more than its superblock",
          "[hdf5][errors]") {
  const std::string path = temp_path("earliest.h5");
  { H5Id f(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose); }  // superblock 0
  CHECK(read_error(path) == path + ": not a result file this gpuscale reads: superblock version 0, HDF5's earliest "
                                   "file format (another program's file, a gpuscale file before schema 1.4, which "
                                   "gpuscale up to commit " + kLastReaderOfOlder + " reads, or a damaged one)");
  fs::remove(path);
}

TEST_CASE("variable-length strings, which gpuscale never writes, are refused unread", "[hdf5][errors]") {
  const std::string path = temp_path("vlen.h5");
  const std::string damaged = path + ": damaged result file: ";
  write_file(path, {sample_case(0, "parallel")});
  edit_file(
      path,
      [](hid_t f) {
        H5Id vlen(H5Tcopy(H5T_C_S1), H5Tclose);
        H5Tset_size(vlen.get(), H5T_VARIABLE);
        H5Id scalar(H5Screate(H5S_SCALAR), H5Sclose);
        H5Adelete(f, "backend");
        H5Id a(H5Acreate2(f, "backend", vlen.get(), scalar.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
        const char* value = "cpu";
        REQUIRE(H5Awrite(a.get(), vlen.get(), &value) >= 0);
      },
      false);
  CHECK(read_error(path) == damaged + "attribute 'backend' of / is a variable-length string, which gpuscale does not "
                                      "write");
  fs::remove(path);
}

TEST_CASE("a file before schema 1.7 is one line naming the last gpuscale that reads it", "[hdf5][errors]") {
  const std::string path = temp_path("old.h5");
  write_file(path, {sample_case(0, "parallel")});
  edit_file(
      path,
      [](hid_t f) {
        H5Adelete(f, "schemaVersion");
        h5::write_attr(f, "schemaVersion", std::string("1.6"));
      },
      false);
  CHECK(read_error(path) == path + ": schemaVersion 1.6 is older than this gpuscale reads (1.7 on); gpuscale up to "
                                   "commit " + kLastReaderOfOlder + " reads it");
  fs::remove(path);
}

TEST_CASE("the plan says what did not run, a file marked complete without a planned case is damaged", "[hdf5][errors]") {
  const std::string path = temp_path("plan.h5");
  const std::string damaged = path + ": damaged result file: ";
  fs::remove(path);
  RunRecord run = sample_run();
  run.cases_planned = 3;
  run.plan = {{"gemm-512 size=512 [serial]", {}},
              {"gemm-512 size=512 [parallel]", {{"min_efficiency", 0.8}}},
              {"other size=64 [parallel]", {{"max_median_s", 0.5}, {"min_gflops_per_rank", 12.25}}}};
  {
    ResultWriter w(path, run);
    w.write_case(sample_case(0, "serial"));
    w.mark_ended("aborted: SIGTERM during case 2 of 3 (gemm-512 size=512 [parallel])");
  }
  const RunRecord back = read_result_file(path);
  CHECK(back.cases.size() == 1);
  CHECK_FALSE(back.complete);
  REQUIRE(back.plan.size() == 3);
  CHECK(back.plan[1].label == "gemm-512 size=512 [parallel]");
  CHECK(back.plan[0].limits.empty());
  CHECK(back.plan[2].limits == run.plan[2].limits);
  SECTION("marked complete although case 2 never ran") {
    edit_file(path, [](hid_t f) { h5::write_attr(f, "complete", std::int64_t{1}); }, false);
    CHECK(read_error(path) == damaged + "the run is marked complete, but case 2 of 3 (/cases/0001) is missing");
  }
  SECTION("a case past the plan") {
    edit_file(path, [](hid_t f) {
      H5Lmove(f, "cases/0000", f, "cases/0007", H5P_DEFAULT, H5P_DEFAULT);
    }, false);
    CHECK(read_error(path) == damaged + "/cases/0007 is not one of the 3 planned cases (casesPlanned)");
  }
  SECTION("casesPlanned edited") {
    edit_file(path, [](hid_t f) { h5::write_attr(f, "casesPlanned", std::int64_t{2}); }, false);
    CHECK(read_error(path) == damaged + "/plan/label holds 3 values, 2 expected");
  }
  SECTION("a limit that is not NAME=NUMBER") {
    edit_file(path, [](hid_t f) {
      H5Ldelete(f, "plan/limits", H5P_DEFAULT);
      H5Id p(H5Gopen2(f, "plan", H5P_DEFAULT), H5Gclose);
      h5::write_strings(p.get(), "limits", {"", "min_efficiency=x", ""});
    }, false);
    CHECK(read_error(path) == damaged + "/plan/limits[1] is not a list of NAME=NUMBER");
  }
  fs::remove(path);
}

// ---- Live files ----

#include <sys/file.h>

#include <chrono>
#include <thread>

TEST_CASE("a result file whose writer holds its lock reads as being written, and damaged it is read again first",
          "[hdf5]") {
  const std::string path = temp_path("live.h5");
  write_file(path, {sample_case(0, "serial"), sample_case(1, "parallel")});
  const std::string whole = bytes_of(path);
  CHECK_FALSE(read_result_file(path).being_written);
  // What HDF5's writer holds from creating the file to closing it.
  const int writer = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(flock(writer, LOCK_EX | LOCK_NB) == 0);
  const RunRecord live = read_result_file(path);
  CHECK(live.being_written);
  CHECK(live.cases.size() == 2);
  SECTION("damage that stays") {
    put_bytes(path, whole.substr(0, whole.size() / 2));
    CHECK(read_error(path) == path + ": damaged result file: truncated (file is " + std::to_string(whole.size() / 2) +
                                  " bytes, expected " + std::to_string(whole.size()) +
                                  ") (read while a run was writing it)");
  }
  SECTION("a flush caught half-way: whole again a moment later") {
    put_bytes(path, whole.substr(0, whole.size() / 2));
    std::thread flush([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
      put_bytes(path, whole);
    });
    const RunRecord back = read_result_file(path);
    flush.join();
    CHECK(back.cases.size() == 2);
    CHECK(back.being_written);
  }
  close(writer);
  fs::remove(path);
}

// ---- Schema 1.6: a case's tables, each column self-describing ----

namespace {

// The node-pair schedule as the node-pairs workload gives it: one pair, nodes 0 and 1, in round 1.
CaseTable pairs_table() {
  CaseTable t;
  t.name = "pairs";
  t.columns = {int_column("round", "the round", ColumnRange::positive),
               int_column("node_a", "the lower node", ColumnRange::node),
               int_column("node_b", "the higher node", ColumnRange::node),
               int_column("rank_a", "node_a's rank", ColumnRange::rank),
               int_column("rank_b", "node_b's rank", ColumnRange::rank),
               text_column("host_a", "node_a's host"), text_column("host_b", "node_b's host")};
  t.columns[0].ints = {1};
  t.columns[1].ints = t.columns[3].ints = {0};
  t.columns[2].ints = t.columns[4].ints = {1};
  t.columns[5].texts = {"node0"};
  t.columns[6].texts = {"node1"};
  return t;
}

// A table no reader knows by name: a rank column, a time on the common clock and a plain number.
CaseTable marks_table() {
  CaseTable t;
  t.name = "marks";
  t.columns = {int_column("rank", "whose mark", ColumnRange::rank), clock_column("at", "when, on the common clock"),
               real_column("value", "", "what was marked")};
  t.columns[0].ints = {0, 1};
  t.columns[1].reals = {1.0, 2.0};
  t.columns[2].reals = {10.0, 20.0};
  return t;
}

// A string attribute of a dataset of the file, as h5py would read it.
std::string dataset_attr(hid_t f, const std::string& dataset, const std::string& attr) {
  H5Id d = h5::open_dataset(f, dataset);
  return h5::read_string_attr(d.get(), attr);
}

}  // namespace

TEST_CASE("a table of each column type round-trips with its unit, description, range, clock and levels",
          "[hdf5][tables]") {
  const std::string path = temp_path("table.h5");
  CaseTable t;
  t.name = "gpu_load";  // a name the reader knows nothing of
  t.description = "what each rank's GPU was busy with";
  t.attrs = {{"period", 0.25}, {"limit", 3.0}};
  TableColumn rank = int_column("rank", "whose row", ColumnRange::rank);
  rank.ints = {0, 1, 1};
  TableColumn kind = int_column("kind", "what ran", ColumnRange::level);
  kind.ints = {1, 0, 1};
  kind.levels = {"idle", "busy"};
  kind.levels_name = "kinds";
  TableColumn at = clock_column("at", "when, on the common clock");
  at.reals = {1.0, 2.0, 3.0};
  TableColumn clock = real_column("clock", "MHz", "SM clock", ColumnRange::finite);
  clock.unit_si = 1e6;
  clock.reals = {1980, 1410, 345};
  TableColumn load = real_column("load", "", "share of the interval busy");
  load.reals = {0.5, std::nan(""), 1.0};
  TableColumn host = text_column("host", "where it ran");
  host.texts = {"node0", "node1", "n\xc3\xb6" "de1"};
  TableColumn count = int_column("count", "launches", ColumnRange::positive);
  count.ints = {1, 2, 3};
  t.columns = {rank, kind, at, clock, load, host, count};
  CaseRecord c = sample_case(0, "parallel");
  c.tables = {t};
  write_file(path, {c});

  const RunRecord back = read_result_file(path);
  REQUIRE(back.cases.at(0).tables.size() == 1);
  const CaseTable& got = back.cases[0].tables[0];
  CHECK(got.name == "gpu_load");
  CHECK(got.description == t.description);
  CHECK(got.attrs == t.attrs);  // in the order written
  REQUIRE(got.columns.size() == t.columns.size());  // the levels are no column of their own
  for (std::size_t i = 0; i < t.columns.size(); ++i) {
    const TableColumn &a = t.columns[i], &b = got.columns[i];  // in the order written
    INFO("column " << a.name);
    CHECK(b.name == a.name);
    CHECK(b.type == a.type);
    CHECK(b.unit == a.unit);
    CHECK(b.unit_si == a.unit_si);
    CHECK(b.description == a.description);
    CHECK(b.range == a.range);
    CHECK(b.common_clock == a.common_clock);
    CHECK(b.levels == a.levels);
    CHECK(b.levels_name == a.levels_name);
    CHECK(b.ints == a.ints);
    CHECK(b.texts == a.texts);
    REQUIRE(b.reals.size() == a.reals.size());
    for (std::size_t r = 0; r < a.reals.size(); ++r) {
      CHECK((b.reals[r] == a.reals[r] || (std::isnan(b.reals[r]) && std::isnan(a.reals[r]))));
    }
  }

  // What any HDF5 reader sees: one dataset per column, described by its attributes.
  hdf5_quiet();
  H5Id f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  H5Id g = h5::open_group(f.get(), "cases/0000/gpu_load");
  CHECK(h5::read_string_attr(g.get(), "description") == t.description);
  CHECK(h5::read_double_attr(g.get(), "period") == 0.25);
  CHECK(h5::read_strings(g.get(), "kinds") == kind.levels);
  CHECK(dataset_attr(g.get(), "kind", "range") == "level");
  CHECK(dataset_attr(g.get(), "kind", "levels") == "kinds");
  CHECK(dataset_attr(g.get(), "rank", "range") == "rank");
  CHECK(dataset_attr(g.get(), "count", "range") == "positive");
  CHECK(dataset_attr(g.get(), "at", "clock") == "common");
  CHECK(dataset_attr(g.get(), "at", "range") == "finite");
  CHECK(dataset_attr(g.get(), "at", "unit") == "s");
  CHECK(dataset_attr(g.get(), "clock", "unit") == "MHz");
  CHECK(dataset_attr(g.get(), "host", "description") == "where it ran");
  H5Id l = h5::open_dataset(g.get(), "load");
  CHECK_FALSE(h5::has_attr(l.get(), "unit"));
  CHECK_FALSE(h5::has_attr(l.get(), "unitSI"));
  CHECK_FALSE(h5::has_attr(l.get(), "range"));  // any: not written
  CHECK_FALSE(h5::has_attr(l.get(), "clock"));
  H5Id ck = h5::open_dataset(g.get(), "clock");
  CHECK(h5::read_double_attr(ck.get(), "unitSI") == 1e6);
  fs::remove(path);
}

TEST_CASE("the runner's tables keep the layout files had before 1.6: only attributes are added", "[hdf5][tables]") {
  const std::string path = temp_path("layout.h5");
  CaseRecord c = sample_case(0, "parallel");
  c.tables = {phases_table({"transfer", "compute"}, {0, 1}, {0, 2}, {0, 1}, {0.1, 2.1}, {0.2, 2.2}),
              telemetry_table(0.05)};
  write_file(path, {c});
  hdf5_quiet();
  H5Id f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  H5Id p = h5::open_group(f.get(), "cases/0000/phases");
  CHECK(h5::members_in_order(p.get()) == std::vector<std::string>{"rank", "sample", "phase", "names", "start", "end"});
  CHECK(h5::read_strings(p.get(), "names") == std::vector<std::string>{"transfer", "compute"});
  for (const char* col : {"rank", "sample", "phase"}) CHECK(h5::value_class(p.get(), col) == H5T_INTEGER);
  CHECK(h5::read_ints(p.get(), "phase") == std::vector<std::int64_t>{0, 1});
  for (const char* col : {"start", "end"}) {
    H5Id d = h5::open_dataset(p.get(), col);
    CHECK(h5::value_class(p.get(), col) == H5T_FLOAT);
    CHECK(h5::read_string_attr(d.get(), "unit") == "s");
    CHECK(h5::read_double_attr(d.get(), "unitSI") == 1.0);
    CHECK(h5::read_string_attr(d.get(), "description").rfind("interval ", 0) == 0);
  }
  H5Id t = h5::open_group(f.get(), "cases/0000/telemetry");
  CHECK(h5::read_double_attr(t.get(), "interval") == 0.05);
  CHECK(h5::members_in_order(t.get()) == std::vector<std::string>{"rank", "time", "sm_clock", "mem_clock",
                                                                  "temperature", "power", "clock_event_reasons"});
  H5Id sm = h5::open_dataset(t.get(), "sm_clock");
  CHECK(h5::read_string_attr(sm.get(), "unit") == "MHz");
  CHECK(h5::read_double_attr(sm.get(), "unitSI") == 1e6);
  CHECK(h5::value_class(t.get(), "clock_event_reasons") == H5T_INTEGER);
  fs::remove(path);
}

TEST_CASE("columns on the common clock move with a better end estimate, in any table", "[hdf5][tables][clock]") {
  const std::string path = temp_path("marks.h5");
  fs::remove(path);
  RunRecord run = sample_run();
  std::vector<RankRecord> end = run.ranks;
  end[0].clock_offset_end_s = end[0].clock_uncertainty_end_s = 0.0;
  end[1].clock_offset_end_s = 5e-6;
  end[1].clock_uncertainty_end_s = 1e-8;  // better than the start's 2e-7: rank 1 moves 4 us earlier
  CaseRecord c = sample_case(0, "parallel");
  c.tables = {marks_table()};
  {
    ResultWriter w(path, run);
    w.write_case(c);
    w.finish(true, "complete", end);
  }
  const RunRecord back = read_result_file(path);
  const auto& at = column_of(back.cases[0], "marks", "at").reals;
  CHECK(at[0] == 1.0);
  CHECK(at[1] == Approx(2.0 - 4e-6).margin(1e-12));
  CHECK(column_of(back.cases[0], "marks", "value").reals == std::vector<double>{10.0, 20.0});  // not a time
  fs::remove(path);
}

TEST_CASE("a value outside its column's range is damage, by the column's attributes",
          "[hdf5][tables][errors]") {
  const std::string path = temp_path("ranges.h5");
  const std::string damaged = path + ": damaged result file: ";
  CaseRecord c = sample_case(0, "serial");
  c.tables = {phases_table({"compute"}, {0, 1}, {0, 2}, {0, 0}, {0.1, 2.1}, {0.2, 2.2})};
  SECTION("a rank past the case's ranks, in a table the reader does not know") {
    CaseTable t = marks_table();
    t.columns[0].ints = {0, 2};
    c.tables = {t};
    write_file(path, {c});
    CHECK(read_error(path) == damaged + "/cases/0000/marks/rank[1] is 2, outside 0..1");
  }
  SECTION("a sample past the case's reps") {
    write_file(path, {c});
    edit_file(path, [](hid_t g) { overwrite_ints(g, "phases/sample", {0, 3}); });
    CHECK(read_error(path) == damaged + "/cases/0000/phases/sample[1] is 3, outside 0..2");
  }
  SECTION("a time on the common clock that is not finite") {
    c.tables[0].columns[3].reals[1] = std::nan("");
    write_file(path, {c});
    CHECK(read_error(path) == damaged + "/cases/0000/phases/start[1] is not finite");
  }
  SECTION("a column shorter than the table's first") {
    c.tables = {marks_table()};
    write_file(path, {c});
    edit_file(path, [](hid_t g) {
      H5Ldelete(g, "marks/value", H5P_DEFAULT);
      H5Id m(H5Gopen2(g, "marks", H5P_DEFAULT), H5Gclose);
      h5::write_doubles(m.get(), "value", {1.0}, 1, 0, nullptr, "");
    });
    CHECK(read_error(path) == damaged + "/cases/0000/marks/value holds 1 values, 2 expected");
  }
  SECTION("a phase name repeated") {
    c.tables = {phases_table({"compute", "transfer"}, {0, 1}, {0, 2}, {0, 1}, {0.1, 2.1}, {0.2, 2.2})};
    write_file(path, {c});
    edit_file(path, [](hid_t g) {
      H5Ldelete(g, "phases/names", H5P_DEFAULT);
      H5Id p(H5Gopen2(g, "phases", H5P_DEFAULT), H5Gclose);
      h5::write_strings(p.get(), "names", {"compute", "compute"});
    });
    CHECK(read_error(path) == damaged + "/cases/0000/phases/names: 2 names for 2 rows, or names repeated");
  }
  SECTION("a node past the run's ranks") {
    c.tables = {pairs_table()};
    c.tables[0].columns[2].ints = {2};
    write_file(path, {c});
    CHECK(read_error(path) == damaged + "/cases/0000/pairs/node_b[0] is 2, outside 0..1");
  }
  fs::remove(path);
}

TEST_CASE("a table its reader would call damaged is refused before anything of the case is written",
          "[hdf5][tables][errors]") {
  const std::string path = temp_path("refused.h5");
  fs::remove(path);
  CaseRecord c = sample_case(0, "serial");
  {
    ResultWriter w(path, sample_run());
    CaseTable t = marks_table();
    t.columns[2].reals = {1.0};
    c.tables = {t};
    CHECK_THROWS_WITH(w.write_case(c), "table 'marks', column 'value': not as long as the table's first column");
    c.tables = {phases_table({"compute"}, {0, 1}, {0, 2}, {0, 1}, {0.1, 2.1}, {0.2, 2.2})};
    CHECK_THROWS_WITH(w.write_case(c), "table 'phases', column 'phase': 1 is not one of its levels");
    c.tables = {marks_table()};
    c.tables[0].name = "parameters";
    CHECK_THROWS_WITH(w.write_case(c), "table 'parameters': not a name a case's table can have");
    c.tables = {marks_table(), marks_table()};
    CHECK_THROWS_WITH(w.write_case(c), "table 'marks': two tables of that name");
    c.tables = {marks_table()};
    c.tables[0].columns[1].name = "rank";
    CHECK_THROWS_WITH(w.write_case(c), "table 'marks': 'rank' is not a name for one of its datasets");
    c.tables = {marks_table()};
    c.tables[0].attrs = {{"interval", std::nan("")}};
    CHECK_THROWS_WITH(w.write_case(c), "table 'marks': attribute 'interval' is not a number about the table");
    c.tables = {marks_table()};
    w.write_case(c);  // the writer goes on: nothing of the refused ones was written
    w.finish(true, "complete", sample_run().ranks);
  }
  const RunRecord back = read_result_file(path);
  REQUIRE(back.cases.size() == 1);
  CHECK(back.cases[0].tables.size() == 1);
  fs::remove(path);
}

// ---- Schema 1.7: each dataset's values bound to its place ----

namespace {

// Where the chunk that holds value [row][col] of `dataset` lies in the file `path`: its first byte and its size
// (as stored, its checksum too).
std::pair<std::size_t, std::size_t> chunk_at(const std::string& path, const std::string& dataset, hsize_t row,
                                             hsize_t col) {
  hdf5_quiet();
  H5Id f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  H5Id d(H5Dopen2(f.get(), dataset.c_str(), H5P_DEFAULT), H5Dclose);
  REQUIRE(d.get() >= 0);
  const hsize_t at[2] = {row, col};
  unsigned mask = 0;
  haddr_t addr = HADDR_UNDEF;
  hsize_t size = 0;
  REQUIRE(H5Dget_chunk_info_by_coord(d.get(), at, &mask, &addr, &size) >= 0);
  REQUIRE(addr != HADDR_UNDEF);
  return {static_cast<std::size_t>(addr), static_cast<std::size_t>(size)};
}

// The file's bytes with chunk `a` and chunk `b` (of one size) swapped, or (copy) `a` written over `b` too.
void move_chunk(const std::string& path, std::pair<std::size_t, std::size_t> a, std::pair<std::size_t, std::size_t> b,
                bool copy) {
  REQUIRE(a.second == b.second);
  std::string bytes = bytes_of(path);
  const std::string from = bytes.substr(a.first, a.second), to = bytes.substr(b.first, b.second);
  REQUIRE((from != to));  // a move that changes something (not printed when it fails: 1 MiB of bytes)
  bytes.replace(b.first, b.second, from);
  if (!copy) bytes.replace(a.first, a.second, to);
  put_bytes(path, bytes);
}

// big_case with times of its own: case `index`, its samples `shift` s later and longer, rank 1's longer still.
CaseRecord big_case_at(std::size_t index, int reps, double shift) {
  CaseRecord c = big_case(reps);
  c.index = index;
  for (std::size_t i = 0; i < c.wall_start_s.size(); ++i) {
    c.device_time_s[i] *= 1.0 + shift + (i < static_cast<std::size_t>(reps) ? 0.0 : 0.5);
    c.wall_start_s[i] += shift;
    c.wall_end_s[i] = c.wall_start_s[i] + c.device_time_s[i];
  }
  return c;
}

}  // namespace

TEST_CASE("a chunk that checksums whole but sits where another belongs is damage: swapped, copied, moved",
          "[hdf5][checksum][digest]") {
  const std::string path = temp_path("misplaced.h5");
  const std::string damaged = path + ": damaged result file: ";
  const std::string misplaced = " does not hold what was written for it (data moved, swapped or copied there from "
                                "elsewhere in the file)";
  // 150000 reps of 2 ranks: each rank's row in two chunks of 1 MiB (131072 values, the second one's partly unused),
  // each with its checksum.
  write_file(path, {big_case_at(0, 150000, 0.0), big_case_at(1, 150000, 100.0)});
  REQUIRE(read_error(path).empty());
  SECTION("two cases' sample times swapped: each case shows the other's, and every other check passes") {
    for (const char* d : {"wall_start", "wall_end"}) {
      move_chunk(path, chunk_at(path, std::string("cases/0000/") + d, 0, 0),
                 chunk_at(path, std::string("cases/0001/") + d, 0, 0), false);
    }
    CHECK(read_error(path) == damaged + "/cases/0000/wall_start" + misplaced);
  }
  SECTION("a value out of range is named first, the digest checked last") {
    move_chunk(path, chunk_at(path, "cases/0000/wall_start", 0, 0), chunk_at(path, "cases/0001/wall_start", 0, 0),
               false);
    CHECK(read_error(path) == damaged + "/cases/0000/wall_end[0] is before its wall_start");
  }
  SECTION("one case's chunk copied over another's") {
    move_chunk(path, chunk_at(path, "cases/0000/wall_start", 1, 0), chunk_at(path, "cases/0001/wall_start", 1, 0),
               true);
    CHECK(read_error(path) == damaged + "/cases/0001/wall_start" + misplaced);
  }
  SECTION("two ranks' rows of one dataset swapped") {
    move_chunk(path, chunk_at(path, "cases/0000/device_time", 0, 0), chunk_at(path, "cases/0000/device_time", 1, 0),
               false);
    CHECK(read_error(path) == damaged + "/cases/0000/device_time" + misplaced);
  }
  SECTION("two datasets of one case swapped") {
    move_chunk(path, chunk_at(path, "cases/0001/device_time", 0, 131072),
               chunk_at(path, "cases/0001/enqueue_time", 0, 131072), false);
    CHECK(read_error(path) == damaged + "/cases/0001/device_time" + misplaced);
  }
  fs::remove(path);
}

TEST_CASE("cases visited on a second thread come in order, each once, also when a live file is read again",
          "[hdf5]") {
  const std::string path = temp_path("ahead.h5");
  // 150000 reps of 2 ranks: over the 2^16 samples from which a case is visited on the second thread.
  write_file(path, {big_case_at(0, 150000, 0.0), big_case_at(1, 150000, 100.0), big_case_at(2, 150000, 200.0)});
  const std::string whole = bytes_of(path);
  std::vector<std::pair<std::size_t, double>> seen;  // each case visited: its index, its first and last sample
  const auto visit = [&](const RunRecord&, CaseRecord&& c) {
    seen.emplace_back(c.index, c.wall_start_s.front() + c.wall_end_s.back());
  };
  read_result_file(path, visit, VisitOn::caller);
  const auto here = seen;
  REQUIRE(here.size() == 3);
  seen.clear();
  read_result_file(path, visit, VisitOn::either_thread);
  CHECK(seen == here);
  // The last case damaged: found while the case before is visited on the second thread.
  move_chunk(path, chunk_at(path, "cases/0001/wall_start", 1, 0), chunk_at(path, "cases/0002/wall_start", 1, 0),
             true);
  SECTION("damage that stays: the error, the cases before it visited once") {
    seen.clear();
    CHECK_THROWS_WITH(read_result_file(path, visit, VisitOn::either_thread),
                      Catch::Contains("/cases/0002/wall_start does not hold what was written for it"));
    CHECK(seen == decltype(seen)(here.begin(), here.begin() + 2));
  }
  SECTION("a flush caught half-way: read again from the damaged case, every case visited once") {
    const int writer = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(flock(writer, LOCK_EX | LOCK_NB) == 0);
    std::thread flush([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
      put_bytes(path, whole);
    });
    seen.clear();
    const RunRecord back = read_result_file(path, visit, VisitOn::either_thread);
    flush.join();
    close(writer);
    CHECK(back.being_written);
    CHECK(seen == here);
  }
  fs::remove(path);
}

TEST_CASE("a small dataset (its values in its object header) moved to another case's place is damage",
          "[hdf5][digest]") {
  const std::string path = temp_path("moved.h5");
  const std::string damaged = path + ": damaged result file: ";
  CaseRecord other = sample_case(1, "serial");
  other.device_time_s = {0.25, 0.5, 0.75, 0.25, 0.5, 0.75};
  write_file(path, {sample_case(0, "serial"), other});
  // What a misdirected header write does: the link of one case leads to the other's dataset.
  edit_file(
      path,
      [](hid_t f) {
        REQUIRE(H5Lmove(f, "cases/0000/device_time", f, "cases/0000/was", H5P_DEFAULT, H5P_DEFAULT) >= 0);
        REQUIRE(H5Lmove(f, "cases/0001/device_time", f, "cases/0000/device_time", H5P_DEFAULT, H5P_DEFAULT) >= 0);
        REQUIRE(H5Lmove(f, "cases/0000/was", f, "cases/0001/device_time", H5P_DEFAULT, H5P_DEFAULT) >= 0);
      },
      false);
  CHECK(read_error(path) == damaged + "/cases/0000/device_time does not hold what was written for it (data moved, "
                                      "swapped or copied there from elsewhere in the file)");
  fs::remove(path);
}

TEST_CASE("schema 1.7 files carry a digest with every dataset, older ones, without, read as before",
          "[hdf5][digest]") {
  const std::string path = temp_path("digest.h5");
  CaseRecord c = sample_case(0, "serial");
  c.turn = {0, 1};
  c.tables = {marks_table()};
  write_file(path, {c});
  {
    hdf5_quiet();
    H5Id f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    for (const char* d : {"cases/0000/wall_start", "cases/0000/turn", "cases/0000/marks/at", "ranks/hostname"}) {
      INFO(d);
      H5Id ds(H5Dopen2(f.get(), d, H5P_DEFAULT), H5Dclose);
      REQUIRE(ds.get() >= 0);
      H5Id a(H5Aopen(ds.get(), "digest", H5P_DEFAULT), H5Aclose);
      REQUIRE(a.get() >= 0);
      H5Id t(H5Aget_type(a.get()), H5Tclose);
      CHECK(H5Tequal(t.get(), H5T_STD_U64LE) > 0);
    }
  }
  const auto without_digests = [&](const char* version) {
    edit_file(
        path,
        [&](hid_t f) {
          h5::write_attr(f, "schemaVersion", std::string(version));
          for (const char* d : {"turn", "wall_start", "marks/at"}) {
            REQUIRE(H5Adelete_by_name(f, (std::string("cases/0000/") + d).c_str(), "digest", H5P_DEFAULT) >= 0);
          }
        },
        false);
  };
  SECTION("1.7: a dataset without its digest is damage") {
    without_digests("1.7");
    CHECK(read_error(path) == path + ": damaged result file: /cases/0000/wall_start has no digest (from schema 1.7 "
                                     "on every dataset has one)");
  }
  fs::remove(path);
}

TEST_CASE("each sample's wait for a core (schema 1.9 on) is written and read back, NaN where not known",
          "[hdf5][core_wait]") {
  const std::string path = temp_path("core_wait.h5");
  CaseRecord known = sample_case(0, "serial");
  known.core_wait_s = {0.0, 1e-6, NAN, 2e-3, 0.0, 0.5};
  const CaseRecord none = sample_case(1, "parallel");  // none given (a backend that does not know): NaN in the file
  write_file(path, {known, none});
  SECTION("read back") {
    const RunRecord back = read_result_file(path);
    const auto& got = back.cases.at(0).core_wait_s;
    REQUIRE(got.size() == known.core_wait_s.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      INFO(i);
      if (std::isnan(known.core_wait_s[i])) {
        CHECK(std::isnan(got[i]));
      } else {
        CHECK(got[i] == known.core_wait_s[i]);
      }
    }
    const auto& unknown = back.cases.at(1).core_wait_s;
    REQUIRE(unknown.size() == 6);
    for (double w : unknown) CHECK(std::isnan(w));
  }
  SECTION("a negative or infinite wait is damage") {
    edit_file(path, [](hid_t g) { h5::overwrite_doubles(g, "core_wait", {0.0, -1e-6, NAN, 0.0, 0.0, 0.0}); });
    CHECK(read_error(path) == path + ": damaged result file: /cases/0000/core_wait[1] is negative");
    edit_file(path, [](hid_t g) { h5::overwrite_doubles(g, "core_wait", {0.0, 0.0, NAN, INFINITY, 0.0, 0.0}); });
    CHECK(read_error(path) == path + ": damaged result file: /cases/0000/core_wait[3] is not finite");
    edit_file(path, [](hid_t g) { h5::overwrite_doubles(g, "core_wait", {NAN, NAN, NAN, NAN, 0.0, -INFINITY}); });
    CHECK(read_error(path) == path + ": damaged result file: /cases/0000/core_wait[5] is not finite");
    edit_file(path, [](hid_t g) { h5::overwrite_doubles(g, "core_wait", {0.0, NAN, 0.0, NAN, INFINITY, 0.0}); });
    CHECK(read_error(path) == path + ": damaged result file: /cases/0000/core_wait[4] is not finite");
  }
  SECTION("a 1.9 file without it is damage; a 1.8 file has none, and the rest reads as written") {
    edit_file(path, [](hid_t g) { REQUIRE(H5Ldelete(g, "core_wait", H5P_DEFAULT) >= 0); });
    CHECK(read_error(path) == path + ": damaged result file: /cases/0000/core_wait missing");
    edit_file(path, [](hid_t f) { h5::write_attr(f, "schemaVersion", std::string("1.8")); }, false);
    const RunRecord back = read_result_file(path);
    CHECK(back.cases.at(0).core_wait_s.empty());
    CHECK(back.cases.at(0).device_time_s == known.device_time_s);
    CHECK(back.cases.at(1).core_wait_s.empty());
  }
  fs::remove(path);
}

// ---- /ranks: every column of kRankFields ----

#include <set>
#include <type_traits>
#include <variant>

#include "app/rank_table.hpp"
#include "io/rank_fields.hpp"

namespace {

// A row of `ranks` rows whose every field holds a value of its own (within the field's range), from its place in
// kRankFields and the row's index.
RankRecord distinct_rank(int row, int ranks) {
  RankRecord r;
  for (std::size_t i = 0; i < kRankFieldCount; ++i) {
    const RankField& field = kRankFields[i];
    const int k = static_cast<int>(i);
    std::visit(
        [&](auto member) {
          using T = RankValue<decltype(member)>;
          if constexpr (std::is_same_v<T, std::string>) {
            r.*member = std::string(field.name) + " of " + std::to_string(row);
          } else if constexpr (std::is_same_v<T, double>) {
            r.*member = 1e-3 * (k + 1) + row;
          } else if constexpr (std::is_same_v<T, bool>) {
            r.*member = row % 2 == 1;
          } else {
            r.*member = field.range == RankRange::index  ? row
                        : field.range == RankRange::size ? ranks
                        : field.range == RankRange::count ? 10 * k + row
                                                           : -10 * k - row;
          }
        },
        field.member);
  }
  return r;
}

// The fields in which two rows differ (doubles compared exactly), but for those in `skip`.
std::vector<std::string> differing_fields(const RankRecord& a, const RankRecord& b,
                                          const std::set<std::string>& skip = {}) {
  std::vector<std::string> out;
  for (const RankField& field : kRankFields) {
    const bool same = std::visit(
        [&](auto member) {
          if constexpr (std::is_same_v<RankValue<decltype(member)>, double>) {
            if (std::isnan(a.*member) && std::isnan(b.*member)) return true;
          }
          return a.*member == b.*member;
        },
        field.member);
    if (!same && !skip.count(field.name)) out.push_back(field.name);
  }
  return out;
}

}  // namespace

TEST_CASE("every /ranks column round-trips through the gather's packing and the file, with its attributes",
          "[hdf5][ranks]") {
  const std::string path = temp_path("ranks.h5");
  fs::remove(path);
  RunRecord run = sample_run();
  run.ranks = {distinct_rank(0, 2), distinct_rank(1, 2)};
  run.ranks[1].device_name = "a|b\nc";  // the packing does not split at any byte
  for (const RankRecord& r : run.ranks) {
    const PackedRank p = pack_rank(r);
    REQUIRE(p.numbers.size() == kRankFieldCount);
    CHECK(differing_fields(unpack_rank(p.numbers.data(), p.texts), r).empty());
  }
  {
    ResultWriter w(path, run);
    w.finish(true, "complete", run.ranks);
  }
  const RunRecord back = read_result_file(path);
  REQUIRE(back.ranks.size() == 2);
  for (std::size_t r = 0; r < 2; ++r) {
    INFO("rank " << r);
    // The applied estimate is the writer's: the start one, or the end one where that is better.
    CHECK(differing_fields(back.ranks[r], run.ranks[r], {"clock_offset_applied", "clock_uncertainty_applied"})
              .empty());
    const RankRecord& want = run.ranks[r];
    CHECK(back.ranks[r].clock_offset_applied_s ==
          (end_clock_is_better(want) ? want.clock_offset_end_s : want.clock_offset_start_s));
  }
  H5Id f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  H5Id g = h5::open_group(f.get(), "ranks");
  CHECK(h5::child_names(g.get()).size() == kRankFieldCount);
  for (const RankField& field : kRankFields) {
    INFO("column " << field.name);
    const H5T_class_t want = rank_field_type(field) == ColumnType::text   ? H5T_STRING
                             : rank_field_type(field) == ColumnType::real ? H5T_FLOAT
                                                                          : H5T_INTEGER;
    CHECK(h5::value_class(g.get(), field.name) == want);
    H5Id d = h5::open_dataset(g.get(), field.name);
    CHECK(h5::has_attr(d.get(), "unit") == (field.unit != nullptr));
    if (field.unit) CHECK(h5::read_string_attr(d.get(), "unit") == field.unit);
    if (field.unit) CHECK(h5::read_double_attr(d.get(), "unitSI") == field.unit_si);
    if (field.description) CHECK(h5::read_string_attr(d.get(), "description") == field.description);
  }
  fs::remove(path);
}

TEST_CASE("a file before a rank column's schema reads without it: each later set where its first column is there",
          "[hdf5][ranks]") {
  const std::string path = temp_path("ranks-old.h5");
  RunRecord run = sample_run();
  run.ranks = {distinct_rank(0, 2), distinct_rank(1, 2)};
  const auto without = [&](std::set<std::string> marks) {
    fs::remove(path);
    { ResultWriter w(path, run); }
    edit_file(
        path,
        [&](hid_t f) {
          for (const RankField& field : kRankFields) {
            if (field.read_with && marks.count(field.read_with)) {
              REQUIRE(H5Ldelete(f, (std::string("ranks/") + field.name).c_str(), H5P_DEFAULT) >= 0);
            }
          }
        },
        false);
    return read_result_file(path);
  };
  const std::set<std::string> later{kSinceBootId, kSince19GpuPick};
  SECTION("schema 1.8: no column of 1.9, each the record's default") {
    const RunRecord back = without(later);
    std::set<std::string> every, since;  // the columns of every file, and the later ones
    for (const RankField& field : kRankFields) (field.read_with ? since : every).insert(field.name);
    since.insert({"clock_offset_applied", "clock_uncertainty_applied"});  // the writer starts them at the start's
    CHECK(differing_fields(back.ranks[1], run.ranks[1], since) == std::vector<std::string>{});
    CHECK(differing_fields(back.ranks[1], RankRecord{}, every) == std::vector<std::string>{});
  }
  SECTION("a set's first column missing: the set is not read") {
    const RunRecord back = without({kSince19GpuPick});
    CHECK(back.ranks[1].gpus_visible == RankRecord{}.gpus_visible);
    CHECK(back.ranks[1].gpu_peers.empty());
    CHECK(back.ranks[1].boot_id == run.ranks[1].boot_id);
  }
  fs::remove(path);
}
