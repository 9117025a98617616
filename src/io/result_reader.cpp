#include "io/result_reader.hpp"

#include <sys/stat.h>

#include "core/error.hpp"
#include "io/hdf5_io.hpp"

namespace gpuscale {

RunRecord read_result_file(const std::string& path) {
  hdf5_quiet();
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) throw InputError(path + ": no such file");
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError(path + ": not an HDF5 file");
  }
  H5Id file(GPUSCALE_H5(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT)), H5Fclose);
  const hid_t f = file.get();
  if (!h5::has_attr(f, "software") || h5::read_string_attr(f, "software") != "gpuscale") {
    throw InputError(path + ": not a gpuscale result file (no software = \"gpuscale\" attribute)");
  }
  RunRecord run;
  run.software_version = h5::read_string_attr(f, "softwareVersion");
  run.date = h5::read_string_attr(f, "date");
  run.schema_version = h5::read_string_attr(f, "schemaVersion");
  if (run.schema_version.substr(0, run.schema_version.find('.')) !=
      std::string(kSchemaVersion).substr(0, std::string(kSchemaVersion).find('.'))) {
    throw InputError(path + ": schemaVersion " + run.schema_version + " is not readable by this gpuscale (reads " +
                     kSchemaVersion + ")");
  }
  run.software_dependencies = h5::read_string_attr(f, "softwareDependencies");
  run.command_line = h5::read_string_attr(f, "commandLine");
  run.config_file = h5::read_string_attr(f, "configFile");
  run.config_text = h5::read_string_attr(f, "config");
  run.config_overrides = h5::read_string_attr(f, "configOverrides");
  run.backend = h5::read_string_attr(f, "backend");
  run.backend_reason = h5::read_string_attr(f, "backendReason");
  // Absent from files of schema 1.0, which had no transfers.
  run.comm = h5::has_attr(f, "comm") ? h5::read_string_attr(f, "comm") : "";
  run.comm_reason = h5::has_attr(f, "commReason") ? h5::read_string_attr(f, "commReason") : "";
  run.slurm_job_id = h5::read_string_attr(f, "slurmJobId");
  if (h5::has_attr(f, "warnings")) {  // schema 1.2 on
    const std::string w = h5::read_string_attr(f, "warnings");
    for (std::size_t from = 0; from < w.size();) {
      const std::size_t nl = std::min(w.find('\n', from), w.size());
      run.warnings.push_back(w.substr(from, nl - from));
      from = nl + 1;
    }
  }
  run.nodes = static_cast<int>(h5::read_int_attr(f, "nodes"));
  run.complete = h5::read_int_attr(f, "complete") != 0;
  if (h5::has_attr(f, "casesPlanned")) run.cases_planned = static_cast<std::size_t>(h5::read_int_attr(f, "casesPlanned"));
  if (h5::has_attr(f, "lastUpdate")) run.last_update = h5::read_string_attr(f, "lastUpdate");
  run.status = h5::read_string_attr(f, "status");
  {
    H5Id env = h5::open_group(f, "environment");
    for (const auto& k : h5::attr_names(env.get())) run.environment.emplace_back(k, h5::read_string_attr(env.get(), k));
  }
  {
    H5Id g = h5::open_group(f, "ranks");
    const hid_t id = g.get();
    const auto host = h5::read_strings(id, "hostname");
    const auto node = h5::read_ints(id, "node_index");
    const auto lrank = h5::read_ints(id, "local_rank");
    const auto lsize = h5::read_ints(id, "local_size");
    const auto pid = h5::read_ints(id, "pid");
    const auto kind = h5::read_strings(id, "device_kind");
    const auto name = h5::read_strings(id, "device_name");
    const auto uuid = h5::read_strings(id, "device_uuid");
    const auto pci = h5::read_strings(id, "device_pci_bus_id");
    const auto o0 = h5::read_doubles(id, "clock_offset_start");
    const auto u0 = h5::read_doubles(id, "clock_uncertainty_start");
    const auto o1 = h5::read_doubles(id, "clock_offset_end");
    const auto u1 = h5::read_doubles(id, "clock_uncertainty_end");
    for (std::size_t r = 0; r < host.size(); ++r) {
      RankRecord rr;
      rr.hostname = host[r];
      rr.node_index = static_cast<int>(node.at(r));
      rr.local_rank = static_cast<int>(lrank.at(r));
      rr.local_size = static_cast<int>(lsize.at(r));
      rr.pid = static_cast<int>(pid.at(r));
      rr.device_kind = kind.at(r);
      rr.device_name = name.at(r);
      rr.device_uuid = uuid.at(r);
      rr.device_pci_bus_id = pci.at(r);
      rr.clock_offset_start_s = o0.at(r);
      rr.clock_uncertainty_start_s = u0.at(r);
      rr.clock_offset_end_s = o1.at(r);
      rr.clock_uncertainty_end_s = u1.at(r);
      run.ranks.push_back(rr);
    }
    if (h5::exists(id, "clock_offset_applied")) {  // schema 1.3 on: the estimate the wall times are on
      const auto oa = h5::read_doubles(id, "clock_offset_applied");
      const auto ua = h5::read_doubles(id, "clock_uncertainty_applied");
      for (std::size_t r = 0; r < run.ranks.size(); ++r) {
        run.ranks[r].clock_offset_applied_s = oa.at(r);
        run.ranks[r].clock_uncertainty_applied_s = ua.at(r);
      }
    }
    if (h5::exists(id, "cpu_affinity")) {  // schema 1.2 on: where each rank may run
      const auto shared = h5::read_ints(id, "clock_shared");
      const auto affinity = h5::read_strings(id, "cpu_affinity");
      const auto available = h5::read_ints(id, "cores_available");
      const auto node_cores = h5::read_ints(id, "node_cores");
      const auto visible = h5::read_strings(id, "cuda_visible_devices");
      for (std::size_t r = 0; r < run.ranks.size(); ++r) {
        RankRecord& rr = run.ranks[r];
        rr.clock_shared = shared.at(r) != 0;
        rr.cpu_affinity = affinity.at(r);
        rr.cores_available = static_cast<int>(available.at(r));
        rr.node_cores = static_cast<int>(node_cores.at(r));
        rr.cuda_visible_devices = visible.at(r);
      }
    }
    if (h5::exists(id, "telemetry")) {  // schema 1.2 on: the GPU of each rank
      const auto tel = h5::read_strings(id, "telemetry");
      const auto sm = h5::read_doubles(id, "max_sm_clock");
      const auto mem = h5::read_doubles(id, "max_mem_clock");
      const auto power = h5::read_doubles(id, "power_limit");
      const auto gen = h5::read_ints(id, "pcie_gen");
      const auto width = h5::read_ints(id, "pcie_width");
      const auto max_gen = h5::read_ints(id, "pcie_max_gen");
      const auto max_width = h5::read_ints(id, "pcie_max_width");
      const auto nvlinks = h5::read_ints(id, "nvlinks_active");
      const auto numa = h5::read_ints(id, "numa_node");
      const auto cpus = h5::read_strings(id, "local_cpulist");
      for (std::size_t r = 0; r < run.ranks.size(); ++r) {
        RankRecord& rr = run.ranks[r];
        rr.telemetry = tel.at(r);
        rr.max_sm_clock_mhz = sm.at(r);
        rr.max_mem_clock_mhz = mem.at(r);
        rr.power_limit_w = power.at(r);
        rr.pcie_gen = static_cast<int>(gen.at(r));
        rr.pcie_width = static_cast<int>(width.at(r));
        rr.pcie_max_gen = static_cast<int>(max_gen.at(r));
        rr.pcie_max_width = static_cast<int>(max_width.at(r));
        rr.nvlinks_active = static_cast<int>(nvlinks.at(r));
        rr.numa_node = static_cast<int>(numa.at(r));
        rr.local_cpulist = cpus.at(r);
      }
    }
  }
  if (h5::exists(f, "links")) {
    H5Id g = h5::open_group(f, "links");
    const auto rank = h5::read_ints(g.get(), "rank");
    const auto peer = h5::read_strings(g.get(), "peer_pci_bus_id");
    const auto nvlinks = h5::read_ints(g.get(), "nvlinks");
    const auto ancestor = h5::read_strings(g.get(), "common_ancestor");
    for (std::size_t i = 0; i < rank.size(); ++i) {
      run.links.push_back({static_cast<int>(rank[i]), peer.at(i), static_cast<int>(nvlinks.at(i)), ancestor.at(i)});
    }
  }
  H5Id cases = h5::open_group(f, "cases");
  for (const auto& name : h5::child_names(cases.get())) {
    H5Id g = h5::open_group(cases.get(), name);
    const hid_t id = g.get();
    CaseRecord c;
    c.index = static_cast<std::size_t>(h5::read_int_attr(id, "index"));
    c.experiment = h5::read_string_attr(id, "name");
    c.workload = h5::read_string_attr(id, "workload");
    c.mode = h5::read_string_attr(id, "mode");
    c.backend = h5::read_string_attr(id, "backend");
    c.status = h5::read_string_attr(id, "status");
    if (h5::has_attr(id, "status_reason")) c.status_reason = h5::read_string_attr(id, "status_reason");
    c.note = h5::read_string_attr(id, "note");
    c.ranks = static_cast<int>(h5::read_int_attr(id, "ranks"));
    c.nodes = static_cast<int>(h5::read_int_attr(id, "nodes"));
    c.reps = static_cast<int>(h5::read_int_attr(id, "reps"));
    c.warmup = static_cast<int>(h5::read_int_attr(id, "warmup"));
    c.flops_per_sample = h5::read_double_attr(id, "flops_per_sample");
    c.bytes_per_sample = h5::read_double_attr(id, "bytes_per_sample");
    c.verify_tolerance = h5::read_double_attr(id, "verify_tolerance");
    {
      H5Id p = h5::open_group(id, "parameters");
      for (const auto& k : h5::attr_names(p.get())) c.params.set(k, h5::read_value_attr(p.get(), k));
    }
    if (h5::has_attr(id, "scope")) {
      c.scope = h5::read_string_attr(id, "scope");
      c.comm = h5::read_string_attr(id, "comm");
      c.groups = static_cast<int>(h5::read_int_attr(id, "groups"));
      c.group = h5::read_ints(id, "group");
      c.group_rank = h5::read_ints(id, "group_rank");
      c.group_size = h5::read_ints(id, "group_size");
    }
    if (c.status == "skipped") {  // nothing ran: no samples
      c.reps = 0;
      run.cases.push_back(std::move(c));
      continue;
    }
    c.device_time_s = h5::read_doubles(id, "device_time");
    c.enqueue_s = h5::read_doubles(id, "enqueue_time");
    c.wall_start_s = h5::read_doubles(id, "wall_start");
    c.wall_end_s = h5::read_doubles(id, "wall_end");
    c.verify_error = h5::read_doubles(id, "verify_error");
    if (h5::exists(id, "turn")) c.turn = h5::read_ints(id, "turn");  // schema 1.0 has none
    if (h5::exists(id, "warmup_samples")) c.warmup_samples = h5::read_ints(id, "warmup_samples");  // 1.2 on
    if (h5::exists(id, "warmup_device_time")) {
      c.warmup_device_time_s = h5::read_doubles(id, "warmup_device_time");
      c.warmup_width = c.ranks > 0 ? static_cast<int>(c.warmup_device_time_s.size() / c.ranks) : 0;
    }
    if (h5::exists(id, "phases")) {
      H5Id pg = h5::open_group(id, "phases");
      CasePhases& ph = c.phases;
      ph.names = h5::read_strings(pg.get(), "names");
      ph.rank = h5::read_ints(pg.get(), "rank");
      ph.sample = h5::read_ints(pg.get(), "sample");
      ph.phase = h5::read_ints(pg.get(), "phase");
      ph.start_s = h5::read_doubles(pg.get(), "start");
      ph.end_s = h5::read_doubles(pg.get(), "end");
    }
    if (h5::exists(id, "pairs")) {  // node-pairs cases
      H5Id pg = h5::open_group(id, "pairs");
      CasePairs& pr = c.pairs;
      pr.round = h5::read_ints(pg.get(), "round");
      pr.node_a = h5::read_ints(pg.get(), "node_a");
      pr.node_b = h5::read_ints(pg.get(), "node_b");
      pr.rank_a = h5::read_ints(pg.get(), "rank_a");
      pr.rank_b = h5::read_ints(pg.get(), "rank_b");
      pr.host_a = h5::read_strings(pg.get(), "host_a");
      pr.host_b = h5::read_strings(pg.get(), "host_b");
      const std::size_t n = pr.round.size();
      if (pr.node_a.size() != n || pr.node_b.size() != n || pr.rank_a.size() != n || pr.rank_b.size() != n ||
          pr.host_a.size() != n || pr.host_b.size() != n) {
        throw RuntimeError(path + ": case " + name + " has pairs datasets of different lengths");
      }
    }
    if (h5::exists(id, "telemetry")) {
      H5Id tg = h5::open_group(id, "telemetry");
      const hid_t tid = tg.get();
      CaseTelemetry& t = c.telemetry;
      c.telemetry_interval_s = h5::read_double_attr(tid, "interval");
      t.rank = h5::read_ints(tid, "rank");
      t.time_s = h5::read_doubles(tid, "time");
      t.sm_clock_mhz = h5::read_doubles(tid, "sm_clock");
      t.mem_clock_mhz = h5::read_doubles(tid, "mem_clock");
      t.temperature_c = h5::read_doubles(tid, "temperature");
      t.power_w = h5::read_doubles(tid, "power");
      t.clock_event_reasons = h5::read_ints(tid, "clock_event_reasons");
    }
    if (!c.scope.empty()) {
      c.wrong_elements = h5::read_ints(id, "wrong_elements");
      c.op_bytes = h5::read_doubles(id, "op_bytes");
      c.bus_factor = h5::read_doubles(id, "bus_factor");
    }
    const std::size_t want = static_cast<std::size_t>(c.ranks) * static_cast<std::size_t>(c.reps);
    if (c.device_time_s.size() != want || c.enqueue_s.size() != want || c.wall_start_s.size() != want ||
        c.wall_end_s.size() != want) {
      throw RuntimeError(path + ": case " + name + " has datasets of the wrong shape");
    }
    run.cases.push_back(std::move(c));
  }
  return run;
}

RunRecord read_result_file(const std::string& path,
                           const std::function<void(const RunRecord& run, CaseRecord&& c)>& visit) {
  RunRecord run = read_result_file(path);
  std::vector<CaseRecord> cases = std::move(run.cases);
  run.cases.clear();
  for (auto& c : cases) {
    visit(run, std::move(c));
    c = CaseRecord{};
  }
  return run;
}

}  // namespace gpuscale
