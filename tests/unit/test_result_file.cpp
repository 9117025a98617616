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
    ResultWriter w(path, false, run);
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
    ResultWriter w(path, false, sample_run());
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

TEST_CASE("a worse end estimate leaves the times on the start one; phases and telemetry move with wall times",
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
    ResultWriter w(path, false, run);
    w.write_case(c);
    w.finish(true, "complete", end);
  }
  RunRecord back = read_result_file(path);
  CHECK(back.ranks[1].clock_offset_applied_s == 1e-6);
  CHECK(back.cases[0].wall_start_s == c.wall_start_s);
  fs::remove(path);

  end[1].clock_uncertainty_end_s = 1e-8;  // now better: rank 1 moves 4 us earlier, phases too
  {
    ResultWriter w(path, false, run);
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

TEST_CASE("an existing file is not overwritten unless asked", "[hdf5]") {
  const std::string path = temp_path("exists.h5");
  fs::remove(path);
  { ResultWriter w(path, false, sample_run()); }
  const auto size = fs::file_size(path);
  CHECK_THROWS_AS(ResultWriter(path, false, sample_run()), RuntimeError);
  CHECK(fs::file_size(path) == size);
  { ResultWriter w(path, true, sample_run()); }  // --force
  CHECK(read_result_file(path).cases.empty());
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
    ResultWriter w(path, false, run);
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
