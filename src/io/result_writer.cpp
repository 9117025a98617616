#include "io/result_writer.hpp"

#include <cstdio>
#include <ctime>

#include "io/hdf5_io.hpp"

namespace gpuscale {

namespace {

std::string case_group_name(std::size_t index) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04zu", index);
  return buf;
}

// One column of the rank table, e.g. column<double>(ranks, &RankRecord::clock_offset_start_s).
template <class T, class M>
std::vector<T> column(const std::vector<RankRecord>& ranks, M RankRecord::*member) {
  std::vector<T> out;
  for (const auto& r : ranks) out.push_back(static_cast<T>(r.*member));
  return out;
}

}  // namespace

ResultWriter::ResultWriter(const std::string& path, bool overwrite, const RunRecord& run) {
  hdf5_quiet();
  // Every piece of metadata with a checksum (the HDF5 1.8 file format), values in checksummed places (hdf5_io.hpp).
  H5Id fcpl = h5::file_create();
  H5Id fapl = h5::file_access();
  file_ = H5Id(GPUSCALE_H5(H5Fcreate(path.c_str(), overwrite ? H5F_ACC_TRUNC : H5F_ACC_EXCL, fcpl.get(), fapl.get())),
               H5Fclose);
  const hid_t f = file_.get();
  h5::write_attr(f, "software", run.software);
  h5::write_attr(f, "softwareVersion", run.software_version);
  h5::write_attr(f, "date", run.date);
  h5::write_attr(f, "schemaVersion", run.schema_version);
  h5::write_attr(f, "softwareDependencies", run.software_dependencies);
  h5::write_attr(f, "commandLine", run.command_line);
  h5::write_attr(f, "configFile", run.config_file);
  h5::write_attr(f, "config", run.config_text);
  h5::write_attr(f, "configOverrides", run.config_overrides);
  h5::write_attr(f, "backend", run.backend);
  h5::write_attr(f, "backendReason", run.backend_reason);
  h5::write_attr(f, "comm", run.comm);
  h5::write_attr(f, "commReason", run.comm_reason);
  h5::write_attr(f, "slurmJobId", run.slurm_job_id);
  h5::write_attr(f, "ranks", static_cast<std::int64_t>(run.ranks.size()));
  h5::write_attr(f, "nodes", static_cast<std::int64_t>(run.nodes));
  for (const auto& w : run.warnings) warnings_ += (warnings_.empty() ? "" : "\n") + w;
  h5::write_attr(f, "warnings", warnings_);
  h5::write_attr(f, "casesPlanned", static_cast<std::int64_t>(run.cases_planned));
  h5::write_attr(f, "complete", std::int64_t{0});
  h5::write_attr(f, "status", std::string("running"));

  H5Id env = h5::create_group(f, "environment");
  for (const auto& [k, v] : run.environment) h5::write_attr(env.get(), k, v);

  H5Id ranks = h5::create_group(f, "ranks");
  const hid_t g = ranks.get();
  const auto& rs = run.ranks;
  h5::write_strings(g, "hostname", column<std::string>(rs, &RankRecord::hostname));
  h5::write_ints(g, "node_index", column<std::int64_t>(rs, &RankRecord::node_index));
  h5::write_ints(g, "local_rank", column<std::int64_t>(rs, &RankRecord::local_rank));
  h5::write_ints(g, "local_size", column<std::int64_t>(rs, &RankRecord::local_size));
  h5::write_ints(g, "pid", column<std::int64_t>(rs, &RankRecord::pid));
  h5::write_strings(g, "device_kind", column<std::string>(rs, &RankRecord::device_kind));
  h5::write_strings(g, "device_name", column<std::string>(rs, &RankRecord::device_name));
  h5::write_strings(g, "device_uuid", column<std::string>(rs, &RankRecord::device_uuid));
  h5::write_strings(g, "device_pci_bus_id", column<std::string>(rs, &RankRecord::device_pci_bus_id));
  const auto n = rs.size();
  h5::write_doubles(g, "clock_offset_start", column<double>(rs, &RankRecord::clock_offset_start_s),
                    n, 0, "s", "this rank's clock minus rank 0's, estimated at the start");
  h5::write_doubles(g, "clock_uncertainty_start",
                    column<double>(rs, &RankRecord::clock_uncertainty_start_s), n, 0, "s",
                    "half the least round trip of the start estimate");
  h5::write_doubles(g, "clock_offset_end", column<double>(rs, &RankRecord::clock_offset_end_s), n,
                    0, "s", "this rank's clock minus rank 0's, estimated at the end (NaN until the run completes)");
  h5::write_doubles(g, "clock_uncertainty_end",
                    column<double>(rs, &RankRecord::clock_uncertainty_end_s), n, 0, "s",
                    "half the least round trip of the end estimate");

  h5::write_doubles(g, "clock_offset_applied", column<double>(rs, &RankRecord::clock_offset_start_s), n, 0, "s",
                    "the offset the rank's wall times are on: the start estimate, or the end one where it is better "
                    "(smaller uncertainty; applied when the run completes)");
  h5::write_doubles(g, "clock_uncertainty_applied", column<double>(rs, &RankRecord::clock_uncertainty_start_s), n, 0,
                    "s", "the uncertainty of clock_offset_applied");
  h5::write_ints(g, "clock_shared", column<std::int64_t>(rs, &RankRecord::clock_shared));
  h5::write_strings(g, "cpu_affinity", column<std::string>(rs, &RankRecord::cpu_affinity));
  h5::write_ints(g, "cores_available", column<std::int64_t>(rs, &RankRecord::cores_available));
  h5::write_ints(g, "node_cores", column<std::int64_t>(rs, &RankRecord::node_cores));
  h5::write_strings(g, "cuda_visible_devices", column<std::string>(rs, &RankRecord::cuda_visible_devices));
  // The GPU of each rank: telemetry, clocks, power limit, PCIe and NVLink, NUMA affinity.
  h5::write_strings(g, "telemetry", column<std::string>(rs, &RankRecord::telemetry));
  h5::write_doubles(g, "max_sm_clock", column<double>(rs, &RankRecord::max_sm_clock_mhz), n, 0, "MHz",
                    "the GPU's maximum SM clock (NaN: unknown)", 1e6);
  h5::write_doubles(g, "max_mem_clock", column<double>(rs, &RankRecord::max_mem_clock_mhz), n, 0, "MHz",
                    "the GPU's maximum memory clock (NaN: unknown)", 1e6);
  h5::write_doubles(g, "power_limit", column<double>(rs, &RankRecord::power_limit_w), n, 0, "W",
                    "the GPU's enforced power limit (NaN: unknown)");
  h5::write_ints(g, "pcie_gen", column<std::int64_t>(rs, &RankRecord::pcie_gen));
  h5::write_ints(g, "pcie_width", column<std::int64_t>(rs, &RankRecord::pcie_width));
  h5::write_ints(g, "pcie_max_gen", column<std::int64_t>(rs, &RankRecord::pcie_max_gen));
  h5::write_ints(g, "pcie_max_width", column<std::int64_t>(rs, &RankRecord::pcie_max_width));
  h5::write_ints(g, "nvlinks_active", column<std::int64_t>(rs, &RankRecord::nvlinks_active));
  h5::write_ints(g, "numa_node", column<std::int64_t>(rs, &RankRecord::numa_node));
  h5::write_strings(g, "local_cpulist", column<std::string>(rs, &RankRecord::local_cpulist));
  {
    H5Id links = h5::create_group(f, "links");
    std::vector<std::int64_t> rank, nvlinks;
    std::vector<std::string> peer, ancestor;
    for (const auto& l : run.links) {
      rank.push_back(l.rank);
      peer.push_back(l.peer_pci_bus_id);
      nvlinks.push_back(l.nvlinks);
      ancestor.push_back(l.common_ancestor);
    }
    h5::write_ints(links.get(), "rank", rank);
    h5::write_strings(links.get(), "peer_pci_bus_id", peer);
    h5::write_ints(links.get(), "nvlinks", nvlinks);
    h5::write_strings(links.get(), "common_ancestor", ancestor);
  }

  cases_ = h5::create_group(f, "cases");
  flush();
}

void ResultWriter::write_case(const CaseRecord& c) {
  H5Id g = h5::create_group(cases_.get(), case_group_name(c.index));
  const hid_t id = g.get();
  h5::write_attr(id, "index", static_cast<std::int64_t>(c.index));
  h5::write_attr(id, "name", c.experiment);
  h5::write_attr(id, "workload", c.workload);
  h5::write_attr(id, "mode", c.mode);
  h5::write_attr(id, "backend", c.backend);
  h5::write_attr(id, "status", c.status);
  h5::write_attr(id, "status_reason", c.status_reason);
  h5::write_attr(id, "note", c.note);
  h5::write_attr(id, "ranks", static_cast<std::int64_t>(c.ranks));
  h5::write_attr(id, "nodes", static_cast<std::int64_t>(c.nodes));
  h5::write_attr(id, "reps", static_cast<std::int64_t>(c.reps));
  h5::write_attr(id, "warmup", static_cast<std::int64_t>(c.warmup));
  h5::write_attr(id, "flops_per_sample", c.flops_per_sample);
  h5::write_attr(id, "bytes_per_sample", c.bytes_per_sample);
  h5::write_attr(id, "verify_tolerance", c.verify_tolerance);
  for (const auto& [name, limit] : c.expect) h5::write_attr(id, kExpectPrefix + name, limit);  // schema 1.4 on
  {
    H5Id p = h5::create_group(id, "parameters");
    for (const auto& [k, v] : c.params.items()) h5::write_attr(p.get(), k, v);
  }
  if (!c.scope.empty()) {
    h5::write_attr(id, "scope", c.scope);
    h5::write_attr(id, "comm", c.comm);
    h5::write_attr(id, "groups", static_cast<std::int64_t>(c.groups));
    h5::write_ints(id, "group", c.group);
    h5::write_ints(id, "group_rank", c.group_rank);
    h5::write_ints(id, "group_size", c.group_size);
  }
  if (c.status == "skipped") {  // nothing ran: no samples
    g.reset();
    flush();
    return;
  }
  const auto ranks = static_cast<hsize_t>(c.ranks), reps = static_cast<hsize_t>(c.reps);
  h5::write_ints(id, "turn", c.turn);
  h5::write_ints(id, "warmup_samples", c.warmup_samples);
  if (c.warmup_width > 0) {
    h5::write_doubles(id, "warmup_device_time", c.warmup_device_time_s, ranks, static_cast<hsize_t>(c.warmup_width),
                      "s", "device time of each warm-up sample [rank][sample], the first 1000; NaN past the rank's count");
  }
  if (!c.scope.empty()) {
    h5::write_ints(id, "wrong_elements", c.wrong_elements);
    h5::write_doubles(id, "op_bytes", c.op_bytes, ranks, 0, "B",
                      "bytes of one operation in the rank's group, as nccl-tests' size");
    h5::write_doubles(id, "bus_factor", c.bus_factor, ranks, 0, nullptr,
                      "busbw / algbw for the rank's group size (nccl-tests)");
  }
  h5::write_doubles(id, "device_time", c.device_time_s, ranks, reps, "s", "device time of each sample [rank][rep]");
  h5::write_doubles(id, "enqueue_time", c.enqueue_s, ranks, reps, "s",
                    "host time from the sample's start until its work was enqueued (launch calls returned) [rank][rep]");
  h5::write_doubles(id, "wall_start", c.wall_start_s, ranks, reps, "s",
                    "sample start on the common clock (s since the run's epoch on rank 0) [rank][rep]");
  h5::write_doubles(id, "wall_end", c.wall_end_s, ranks, reps, "s",
                    "sample end, after synchronize, on the common clock [rank][rep]");
  if (c.phases.size() > 0) {
    const CasePhases& ph = c.phases;
    H5Id pg = h5::create_group(id, "phases");
    const hid_t pid = pg.get();
    const hsize_t rows = ph.size();
    h5::write_strings(pid, "names", ph.names);
    h5::write_ints(pid, "rank", ph.rank);
    h5::write_ints(pid, "sample", ph.sample);
    h5::write_ints(pid, "phase", ph.phase);
    h5::write_doubles(pid, "start", ph.start_s, rows, 0, "s", "interval start on the common clock");
    h5::write_doubles(pid, "end", ph.end_s, rows, 0, "s", "interval end on the common clock");
  }
  if (c.pairs.size() > 0) {
    const CasePairs& pr = c.pairs;
    H5Id pg = h5::create_group(id, "pairs");
    const hid_t pid = pg.get();
    h5::write_ints(pid, "round", pr.round);
    h5::write_ints(pid, "node_a", pr.node_a);
    h5::write_ints(pid, "node_b", pr.node_b);
    h5::write_ints(pid, "rank_a", pr.rank_a);
    h5::write_ints(pid, "rank_b", pr.rank_b);
    h5::write_strings(pid, "host_a", pr.host_a);
    h5::write_strings(pid, "host_b", pr.host_b);
  }
  if (c.telemetry.size() > 0) {
    const CaseTelemetry& t = c.telemetry;
    H5Id tg = h5::create_group(id, "telemetry");
    const hid_t tid = tg.get();
    const hsize_t rows = t.size();
    h5::write_attr(tid, "interval", c.telemetry_interval_s);
    h5::write_ints(tid, "rank", t.rank);
    h5::write_doubles(tid, "time", t.time_s, rows, 0, "s", "when the reading was taken, on the common clock");
    h5::write_doubles(tid, "sm_clock", t.sm_clock_mhz, rows, 0, "MHz", "SM clock (NaN: not readable)", 1e6);
    h5::write_doubles(tid, "mem_clock", t.mem_clock_mhz, rows, 0, "MHz", "memory clock (NaN: not readable)", 1e6);
    h5::write_doubles(tid, "temperature", t.temperature_c, rows, 0, "degC", "GPU temperature (NaN: not readable)");
    h5::write_doubles(tid, "power", t.power_w, rows, 0, "W", "power draw (NaN: not readable)");
    h5::write_ints(tid, "clock_event_reasons", t.clock_event_reasons);
  }
  h5::write_doubles(id, "verify_error", c.verify_error, ranks, 0, nullptr,
                    c.scope.empty() ? "the workload's verification error per rank (docs/metrics.md)"
                                    : "result elements that differ from the expected ones, per rank");
  g.reset();
  flush();
}

// Moves rank r's times in `name` ([ranks][cols], or one row per entry of
// `rank_of` when given) by shift[r].
void shift_times(hid_t group, const std::string& name, const std::vector<double>& shift,
                 const std::vector<std::int64_t>* rank_of = nullptr) {
  if (!h5::exists(group, name)) return;
  std::vector<double> v = h5::read_doubles(group, name);
  if (v.empty()) return;
  const std::size_t cols = rank_of ? 1 : v.size() / shift.size();
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::size_t r = rank_of ? static_cast<std::size_t>(rank_of->at(i)) : i / cols;
    if (r < shift.size()) v[i] += shift[r];
  }
  h5::overwrite_doubles(group, name, v);
}

void ResultWriter::apply_better_clock(const std::vector<RankRecord>& ranks) {
  // Wall times were put on the common clock with the start estimate: t - offset_start. On the end one
  // they are t - offset_end, i.e. (offset_start - offset_end) later.
  std::vector<double> shift(ranks.size(), 0.0), offset, uncertainty;
  bool any = false;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const RankRecord& rr = ranks[r];
    const bool end = end_clock_is_better(rr);
    if (end) shift[r] = rr.clock_offset_start_s - rr.clock_offset_end_s;
    any = any || end;
    offset.push_back(end ? rr.clock_offset_end_s : rr.clock_offset_start_s);
    uncertainty.push_back(end ? rr.clock_uncertainty_end_s : rr.clock_uncertainty_start_s);
  }
  H5Id g = h5::open_group(file_.get(), "ranks");
  h5::overwrite_doubles(g.get(), "clock_offset_applied", offset);
  h5::overwrite_doubles(g.get(), "clock_uncertainty_applied", uncertainty);
  if (!any) return;
  for (const auto& name : h5::child_names(cases_.get())) {
    H5Id c = h5::open_group(cases_.get(), name);
    shift_times(c.get(), "wall_start", shift);
    shift_times(c.get(), "wall_end", shift);
    for (const char* sub : {"phases", "telemetry"}) {
      if (!h5::exists(c.get(), sub)) continue;
      H5Id t = h5::open_group(c.get(), sub);
      const auto rank = h5::read_ints(t.get(), "rank");
      for (const char* col : {"start", "end", "time"}) shift_times(t.get(), col, shift, &rank);
    }
  }
}

void ResultWriter::finish(bool complete, const std::string& status, const std::vector<RankRecord>& ranks) {
  H5Id g = h5::open_group(file_.get(), "ranks");
  h5::overwrite_doubles(g.get(), "clock_offset_end",
                        column<double>(ranks, &RankRecord::clock_offset_end_s));
  h5::overwrite_doubles(g.get(), "clock_uncertainty_end",
                        column<double>(ranks, &RankRecord::clock_uncertainty_end_s));
  apply_better_clock(ranks);
  h5::write_attr(file_.get(), "complete", static_cast<std::int64_t>(complete ? 1 : 0));
  h5::write_attr(file_.get(), "status", status);
  flush();
}

void ResultWriter::add_warning(const std::string& line) {
  warnings_ += (warnings_.empty() ? "" : "\n") + line;
  h5::write_attr(file_.get(), "warnings", warnings_);
  flush();
}

void ResultWriter::mark_ended(const std::string& status) {
  h5::write_attr(file_.get(), "complete", std::int64_t{0});
  h5::write_attr(file_.get(), "status", status);
  flush();
}

void ResultWriter::flush() {
  // With every flush: a file whose writer died keeps an old time, a live one a recent one.
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S%z", &tm);
  h5::write_attr(file_.get(), "lastUpdate", std::string(buf));
  GPUSCALE_H5(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL));
}

}  // namespace gpuscale
