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
  run.command_line = "gpuscale run x.toml";
  run.config_file = "x.toml";
  run.config_text = "[[experiment]]\nworkload = \"gemm\"\n";
  run.backend = "cpu";
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
  c.mode = mode;
  c.backend = "cpu";
  c.status = "ok";
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
  CHECK(got.mode == "parallel");
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
  c.phases.names = {"compute"};
  c.phases.rank = {0, 1};
  c.phases.sample = {0, 0};
  c.phases.phase = {0, 0};
  c.phases.start_s = {1.0, 1.0};
  c.phases.end_s = {2.0, 2.0};
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
  CHECK(back.cases[0].phases.start_s[0] == 1.0);
  CHECK(back.cases[0].phases.start_s[1] == Approx(1.0 - 4e-6).margin(1e-12));
  CHECK(back.cases[0].phases.end_s[1] == Approx(2.0 - 4e-6).margin(1e-12));
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
  c.telemetry_interval_s = 0.05;
  c.telemetry.rank = {0, 0};
  c.telemetry.time_s = {0.0, 0.05};
  c.telemetry.sm_clock_mhz = {345, 1980};
  c.telemetry.mem_clock_mhz = {2619, 2619};
  c.telemetry.temperature_c = {30, 41};
  c.telemetry.power_w = {70.5, std::nan("")};
  c.telemetry.clock_event_reasons = {1, -1};
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
  CHECK(got.telemetry_interval_s == 0.05);
  CHECK(got.telemetry.rank == c.telemetry.rank);
  CHECK(got.telemetry.sm_clock_mhz == c.telemetry.sm_clock_mhz);
  CHECK(got.telemetry.clock_event_reasons == c.telemetry.clock_event_reasons);
  CHECK(std::isnan(got.telemetry.power_w[1]));
  CHECK(back.cases[1].warmup_width == 0);
  CHECK(back.cases[1].telemetry.size() == 0);
  fs::remove(path);
}

// ---- Schema 1.4: checksums, validation, old files, the crash guard ----

#include <fcntl.h>
#include <sys/wait.h>

#include <csignal>
#include <fstream>
#include <iterator>

#include "io/hdf5_io.hpp"
#include "io/read_guard.hpp"

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
  CHECK(back.schema_version == "1.5");
  fs::remove(path);
}

TEST_CASE("bytes that are not UTF-8 (a path, the environment) are stored as text: \\xNN", "[hdf5]") {
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
  b[at + 3] = static_cast<char>(b[at + 3] ^ 0x10);
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
    H5Id f(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
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
  c.phases.names = {"compute"};
  c.phases.rank = {0, 1};
  c.phases.sample = {0, 2};
  c.phases.phase = {0, 0};
  c.phases.start_s = {0.1, 2.1};
  c.phases.end_s = {0.2, 2.2};
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
    edit_file(path, [](hid_t g) {
      H5Ldelete(g, "phases/phase", H5P_DEFAULT);
      H5Id p(H5Gopen2(g, "phases", H5P_DEFAULT), H5Gclose);
      h5::write_ints(p.get(), "phase", {0, 1});
    });
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

TEST_CASE("files of schema 1.3 and before (variable-length strings, contiguous datasets) stay readable", "[hdf5]") {
  const std::string path = temp_path("old.h5");
  CaseRecord c = sample_case(0, "parallel");
  c.turn = {0, 0};
  write_file(path, {c});
  // Rewrite what schema 1.3 stored differently: variable-length strings (attributes and a column), contiguous data.
  edit_file(
      path,
      [&](hid_t f) {
        H5Id vlen(H5Tcopy(H5T_C_S1), H5Tclose);
        H5Tset_size(vlen.get(), H5T_VARIABLE);
        H5Tset_cset(vlen.get(), H5T_CSET_UTF8);
        H5Id scalar(H5Screate(H5S_SCALAR), H5Sclose);
        const auto vlen_attr = [&](hid_t obj, const char* name, const char* value) {
          H5Adelete(obj, name);
          H5Id a(H5Acreate2(obj, name, vlen.get(), scalar.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
          REQUIRE(H5Awrite(a.get(), vlen.get(), &value) >= 0);
        };
        vlen_attr(f, "schemaVersion", "1.3");
        vlen_attr(f, "backend", "cpu");
        H5Id g(H5Gopen2(f, "cases/0000", H5P_DEFAULT), H5Gclose);
        vlen_attr(g.get(), "mode", "parallel");
        H5Id p(H5Gopen2(g.get(), "parameters", H5P_DEFAULT), H5Gclose);
        vlen_attr(p.get(), "dtype", "fp64");
        // The hostname column as variable-length strings.
        H5Id r(H5Gopen2(f, "ranks", H5P_DEFAULT), H5Gclose);
        H5Ldelete(r.get(), "hostname", H5P_DEFAULT);
        const hsize_t two = 2;
        H5Id space(H5Screate_simple(1, &two, nullptr), H5Sclose);
        H5Id d(H5Dcreate2(r.get(), "hostname", vlen.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
               H5Dclose);
        const char* hosts[2] = {"node0", "node1"};
        REQUIRE(H5Dwrite(d.get(), vlen.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, hosts) >= 0);
        // A sample dataset contiguous, without a checksum.
        H5Ldelete(g.get(), "device_time", H5P_DEFAULT);
        const hsize_t dims[2] = {2, 3};
        H5Id s2(H5Screate_simple(2, dims, nullptr), H5Sclose);
        H5Id dt(H5Dcreate2(g.get(), "device_time", H5T_NATIVE_DOUBLE, s2.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                H5Dclose);
        REQUIRE(H5Dwrite(dt.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, c.device_time_s.data()) >= 0);
      },
      false);
  const RunRecord back = read_result_file(path);
  CHECK(back.schema_version == "1.3");
  CHECK(back.backend == "cpu");
  REQUIRE(back.ranks.size() == 2);
  CHECK(back.ranks[1].hostname == "node1");
  REQUIRE(back.cases.size() == 1);
  CHECK(back.cases[0].mode == "parallel");
  CHECK(back.cases[0].params.get_string("dtype") == "fp64");  // rewritten last: now last in creation order
  CHECK(back.cases[0].params.get_int("size") == 512);
  CHECK(back.cases[0].device_time_s == c.device_time_s);
  fs::remove(path);
}

namespace {
// What a forked child that runs `f` writes to stderr, and its exit code (128 + the signal if one ended it).
template <class F>
std::pair<int, std::string> in_child(F&& f) {
  int out[2];
  REQUIRE(pipe(out) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(out[1], STDERR_FILENO);
    close(out[0]);
    f();
    _exit(0);
  }
  close(out[1]);
  std::string err;
  char buf[256];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) err.append(buf, static_cast<std::size_t>(n));
  close(out[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), err};
}
}  // namespace

TEST_CASE("a crash while a file is read ends with one line and exit code 2", "[hdf5][errors]") {
  const auto [code, err] = in_child([] {
    ReadGuard guard("results/x.h5");
    guarded(guard, [] { std::raise(SIGSEGV); });
  });
  CHECK(code == 2);
  CHECK(err == "gpuscale: error: results/x.h5: damaged result file: the HDF5 library crashed reading it (SIGSEGV)\n");
  // Once disarmed, the handlers and stderr are what they were.
  ReadGuard guard("y.h5");
  struct sigaction before {}, after {};
  sigaction(SIGSEGV, nullptr, &before);
  guarded(guard, [] {});
  sigaction(SIGSEGV, nullptr, &after);
  CHECK(before.sa_handler == after.sa_handler);
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

// ---- Reading never hangs: old global heaps checked first, a stalled read bounded; live files ----

#include <sys/file.h>

#include <chrono>
#include <thread>

#include "io/old_heap_check.hpp"

namespace {

// A file in HDF5's earliest format (superblock 0, no checksums: as files before schema 1.4) whose root has the
// variable-length string attribute software = "gpuscale", its value in a global heap collection. Returns where the
// collection starts.
std::size_t write_old_file(const std::string& path) {
  fs::remove(path);
  {
    H5Id f(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    H5Id vlen(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(vlen.get(), H5T_VARIABLE);
    H5Tset_cset(vlen.get(), H5T_CSET_UTF8);  // as gpuscale wrote them
    H5Id scalar(H5Screate(H5S_SCALAR), H5Sclose);
    H5Id a(H5Acreate2(f.get(), "software", vlen.get(), scalar.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    const char* value = "gpuscale";
    REQUIRE(H5Awrite(a.get(), vlen.get(), &value) >= 0);
  }
  const std::string b = bytes_of(path);
  REQUIRE(b[8] == 0);  // superblock version 0
  const std::size_t at = b.find("GCOL");
  REQUIRE(at != std::string::npos);
  REQUIRE(b.find("GCOL", at + 1) == std::string::npos);
  return at;
}

// `b` with the little-endian 8-byte value `v` at `at`.
std::string with_u64(std::string b, std::size_t at, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
  return b;
}

}  // namespace

TEST_CASE("an old file's global heap is walked before HDF5 reads it: what would loop or overrun is damage",
          "[hdf5][errors]") {
  const std::string path = temp_path("old-heap.h5");
  const std::size_t at = write_old_file(path);
  const std::string whole = bytes_of(path);
  const std::string heap = path + ": damaged result file: global heap at byte " + std::to_string(at) + ": ";
  const std::size_t object = at + 16;  // the first object, "gpuscale", after the collection's header
  SECTION("whole: the heap passes and the string reads (the file then lacks the rest of a result file)") {
    CHECK_FALSE(old_heap_damage(path));
    CHECK(read_error(path) == path + ": damaged result file: attribute 'schemaVersion' of / missing");
  }
  SECTION("an object's header zeroed: index 0 (free space) of size 0, on which HDF5 1.10 loops forever") {
    put_bytes(path, whole.substr(0, object) + std::string(16, '\0') + whole.substr(object + 16));
    CHECK(read_error(path) == heap + "the object at byte " + std::to_string(object) + " has size 0");
  }
  SECTION("an object larger than what is left of its collection") {
    put_bytes(path, with_u64(whole, object + 8, 5000));
    CHECK(read_error(path) == heap + "the object at byte " + std::to_string(object) + " (5000 bytes) runs past its end "
                                     "(byte " + std::to_string(at + 4096) + ")");
  }
  SECTION("free space larger than what is left of its collection") {
    put_bytes(path, with_u64(with_u64(whole, object, 0), object + 8, 4096));
    CHECK(read_error(path) == heap + "the object at byte " + std::to_string(object) + " (4096 bytes) runs past its end "
                                     "(byte " + std::to_string(at + 4096) + ")");
  }
  SECTION("a collection smaller than any HDF5 writes") {
    put_bytes(path, with_u64(whole, at + 8, 12));
    CHECK(read_error(path) == heap + "size 12, below the smallest (4096)");
  }
  SECTION("a collection past the end of the file") {
    put_bytes(path, with_u64(whole, at + 8, 1 << 20));
    CHECK(read_error(path) == heap + "1048576 bytes, past the end of the file (" + std::to_string(whole.size()) +
                                  " bytes)");
  }
  fs::remove(path);
}

TEST_CASE("a file with checksums (schema 1.4) is not searched for global heaps", "[hdf5]") {
  const std::string path = temp_path("new-heap.h5");
  write_file(path, {sample_case(0, "serial")});
  // A collection that would loop, as the samples of a real file could never spell it: ignored.
  std::string b = bytes_of(path);
  const std::string loop =
      std::string("GCOL\1\0\0\0", 8) + with_u64(std::string(8, '\0'), 0, 4096) + std::string(16, '\0');
  b.replace(b.size() - loop.size(), loop.size(), loop);
  put_bytes(path, b);
  CHECK_FALSE(old_heap_damage(path));
  fs::remove(path);
}

TEST_CASE("a read that stops making progress ends with one line and exit code 2, and one that keeps reading does not",
          "[hdf5][errors]") {
  const auto stalled = in_child([] {
    ReadGuard guard("results/x.h5", std::chrono::milliseconds(200));
    guarded(guard, [] {
      for (volatile unsigned long n = 0;; n = n + 1) {
      }
    });
  });
  CHECK(stalled.first == 2);
  CHECK(stalled.second ==
        "gpuscale: error: results/x.h5: damaged result file: the HDF5 library did not finish reading it in 0.2 s\n");
  // Reading for four times the bound, a few bytes at a time.
  const auto reading = in_child([] {
    ReadGuard guard("results/x.h5", std::chrono::milliseconds(300));
    guarded(guard, [] {
      const int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
      char buf[64];
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1200);
      while (std::chrono::steady_clock::now() < until) {
        if (read(fd, buf, sizeof buf) <= 0) break;
      }
      close(fd);
    });
  });
  CHECK(reading.first == 0);
  CHECK(reading.second.empty());
  // Once disarmed, no tick is left to come.
  ReadGuard guard("y.h5", std::chrono::milliseconds(50));
  guarded(guard, [] {});
  itimerval t{};
  getitimer(ITIMER_REAL, &t);
  CHECK((t.it_value.tv_sec == 0 && t.it_value.tv_usec == 0));
}

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
