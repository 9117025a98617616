#include "io/result_writer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <type_traits>
#include <variant>

#include "io/disk_space.hpp"
#include "io/hdf5_io.hpp"
#include "io/rank_fields.hpp"

namespace gpuscale {

namespace {

// Room for the run's status, written in place however long the ones before it were.
constexpr std::size_t kStatusRoom = 1024;

std::string case_group_name(std::size_t index) {
  char buf[32];
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

std::string now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S%z", &tm);
  return buf;
}

void write_run_attrs(hid_t f, const RunRecord& run, const std::string& warnings) {
  h5::write_attr(f, "software", run.software);
  h5::write_attr(f, "softwareVersion", run.software_version);
  h5::write_attr(f, "date", run.date);
  h5::write_attr(f, "schemaVersion", run.schema_version);
  h5::write_attr(f, "softwareDependencies", run.software_dependencies);
  h5::write_attr(f, "mpiLibrary", run.mpi_library);
  std::string settings;
  for (const auto& [k, v] : run.mpi_settings) settings += k + "=" + v + "\n";
  h5::write_attr(f, "mpiSettings", settings);
  h5::write_attr(f, "commandLine", run.command_line);
  h5::write_attr(f, "configFile", run.config_file);
  h5::write_attr(f, "config", run.config_text);
  h5::write_attr(f, "configOverrides", run.config_overrides);
  h5::write_attr(f, "backend", std::string(backend_name(run.backend)));
  h5::write_attr(f, "backendReason", run.backend_reason);
  h5::write_attr(f, "comm", std::string(comm_name(run.comm)));
  h5::write_attr(f, "commReason", run.comm_reason);
  h5::write_attr(f, "slurmJobId", run.slurm_job_id);
  h5::write_attr(f, "ranks", static_cast<std::int64_t>(run.ranks.size()));
  h5::write_attr(f, "nodes", static_cast<std::int64_t>(run.nodes));
  h5::write_attr(f, "warnings", warnings);
  h5::write_attr(f, "casesPlanned", static_cast<std::int64_t>(run.cases_planned));
  h5::write_attr(f, "complete", std::int64_t{0});
  h5::write_attr(f, "status", std::string("running"), kStatusRoom);
  h5::write_attr(f, "lastUpdate", now_iso8601());
  H5Id env = h5::create_group(f, "environment");
  for (const auto& [k, v] : run.environment) h5::write_attr(env.get(), k, v);
}

// One column of /ranks as its field says: strings, int64 (ints and flags), or float64 with its attributes.
void write_rank_field(hid_t g, const RankField& field, const std::vector<RankRecord>& rs) {
  std::visit(
      [&](auto member) {
        using T = RankValue<decltype(member)>;
        if constexpr (std::is_same_v<T, std::string>) {
          h5::write_strings(g, field.name, column<std::string>(rs, member));
        } else if constexpr (std::is_same_v<T, double>) {
          h5::write_doubles(g, field.name, column<double>(rs, member), rs.size(), 0, field.unit,
                            field.description ? field.description : "", field.unit_si);
        } else {
          h5::write_ints(g, field.name, column<std::int64_t>(rs, member));
        }
      },
      field.member);
}

void write_rank_table(hid_t f, const std::vector<RankRecord>& rs) {
  // Until the run ends every rank's times are on its start estimate (finish() moves them where the end one is
  // better).
  std::vector<RankRecord> rows = rs;
  for (RankRecord& r : rows) {
    r.clock_offset_applied_s = r.clock_offset_start_s;
    r.clock_uncertainty_applied_s = r.clock_uncertainty_start_s;
  }
  H5Id ranks = h5::create_group(f, "ranks");
  for (const RankField& field : kRankFields) write_rank_field(ranks.get(), field, rows);
}

void write_links(hid_t f, const std::vector<LinkRecord>& ls) {
  H5Id links = h5::create_group(f, "links");
  std::vector<std::int64_t> rank, nvlinks;
  std::vector<std::string> peer, ancestor;
  for (const auto& l : ls) {
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

// What the run set out to run: a reader tells from it which cases did not run, and which limits went unchecked.
void write_plan(hid_t f, const std::vector<PlannedCase>& plan) {
  H5Id g = h5::create_group(f, "plan");
  std::vector<std::string> label, limits;
  for (const auto& p : plan) {
    label.push_back(p.label);
    std::string text;  // "max_median_s=0.5 min_efficiency=0.8"
    for (const auto& [name, value] : p.limits) {
      char v[32];
      std::snprintf(v, sizeof v, "%.17g", value);
      text += (text.empty() ? "" : " ") + name + "=" + v;
    }
    limits.push_back(text);
  }
  h5::write_strings(g.get(), "label", label);
  h5::write_strings(g.get(), "limits", limits);
}

void write_case_attrs(hid_t id, const CaseRecord& c) {
  h5::write_attr(id, "index", static_cast<std::int64_t>(c.index));
  h5::write_attr(id, "name", c.experiment);
  h5::write_attr(id, "workload", c.workload);
  h5::write_attr(id, "mode", std::string(mode_name(c.mode)));
  h5::write_attr(id, "backend", std::string(backend_name(c.backend)));
  h5::write_attr(id, "status", std::string(status_name(c.status)));
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
  if (c.scope) {
    h5::write_attr(id, "scope", std::string(scope_name(*c.scope)));
    h5::write_attr(id, "comm", std::string(comm_name(c.comm)));
    h5::write_attr(id, "groups", static_cast<std::int64_t>(c.groups));
    h5::write_ints(id, "group", c.group);
    h5::write_ints(id, "group_rank", c.group_rank);
    h5::write_ints(id, "group_size", c.group_size);
  }
}

void write_samples(hid_t id, const CaseRecord& c) {
  const auto ranks = static_cast<hsize_t>(c.ranks), reps = static_cast<hsize_t>(c.reps);
  h5::write_ints(id, "turn", c.turn);
  h5::write_ints(id, "warmup_samples", c.warmup_samples);
  if (c.warmup_width > 0) {
    h5::write_doubles(id, "warmup_device_time", c.warmup_device_time_s, ranks, static_cast<hsize_t>(c.warmup_width),
                      "s",
                      "device time of each warm-up sample [rank][sample], the first 1000; NaN past the rank's count");
  }
  if (c.scope) {
    h5::write_ints(id, "wrong_elements", c.wrong_elements);
    h5::write_doubles(id, "op_bytes", c.op_bytes, ranks, 0, "B",
                      "bytes of one operation in the rank's group, as nccl-tests' size");
    h5::write_doubles(id, "bus_factor", c.bus_factor, ranks, 0, nullptr,
                      "busbw / algbw for the rank's group size (nccl-tests)");
  }
  h5::write_doubles(id, "device_time", c.device_time_s, ranks, reps, "s", "device time of each sample [rank][rep]");
  h5::write_doubles(
      id, "enqueue_time", c.enqueue_s, ranks, reps, "s",
      "host time from the sample's start until its work was enqueued (launch calls returned) [rank][rep]");
  const std::vector<double> unknown(c.core_wait_s.empty() ? ranks * reps : 0, std::nan(""));
  h5::write_doubles(id, "core_wait", c.core_wait_s.empty() ? unknown : c.core_wait_s, ranks, reps, "s",
                    "of device_time, the time the rank's stream thread was runnable but waited for a core "
                    "(CPU backend); NaN: not known [rank][rep]");
  h5::write_doubles(id, "wall_start", c.wall_start_s, ranks, reps, "s",
                    "sample start on the common clock (s since the run's epoch on rank 0) [rank][rep]");
  h5::write_doubles(id, "wall_end", c.wall_end_s, ranks, reps, "s",
                    "sample end, after synchronize, on the common clock [rank][rep]");
}

// The dataset beside a level column that holds its levels.
std::string levels_dataset(const TableColumn& col) {
  return col.levels_name.empty() ? col.name + "_levels" : col.levels_name;
}

// What makes a column self-describing: its unit and description, and what a reader checks of it and moves
// with a better clock estimate without knowing its table (docs/results-format.md).
void describe_column(hid_t table, const TableColumn& col) {
  H5Id d = h5::open_dataset(table, col.name);
  const hid_t id = d.get();
  if (!col.unit.empty()) h5::write_attr(id, "unit", col.unit);
  if (col.unit_si > 0) h5::write_attr(id, "unitSI", col.unit_si);
  if (!col.description.empty()) h5::write_attr(id, "description", col.description);
  if (col.range != ColumnRange::any) h5::write_attr(id, "range", std::string(range_name(col.range)));
  if (col.common_clock) h5::write_attr(id, "clock", std::string("common"));
  if (col.range == ColumnRange::level) h5::write_attr(id, "levels", levels_dataset(col));
}

void write_table(hid_t case_group, const CaseTable& t) {
  H5Id g = h5::create_group(case_group, t.name, true);
  const hid_t id = g.get();
  if (!t.description.empty()) h5::write_attr(id, "description", t.description);
  for (const auto& [name, value] : t.attrs) h5::write_attr(id, name, value);
  for (const auto& col : t.columns) {
    switch (col.type) {
      case ColumnType::integer: h5::write_ints(id, col.name, col.ints); break;
      case ColumnType::real: h5::write_doubles(id, col.name, col.reals, col.reals.size(), 0, nullptr, ""); break;
      case ColumnType::text: h5::write_strings(id, col.name, col.texts); break;
    }
    if (col.range == ColumnRange::level) h5::write_strings(id, levels_dataset(col), col.levels);
    describe_column(id, col);
  }
}

// A column its reader would call damaged (docs/results-format.md, "Reading").
void check_column(const std::string& table, const TableColumn& col, std::size_t rows) {
  const std::string what = "table '" + table + "', column '" + col.name + "': ";
  if (col.size() != rows) throw RuntimeError(what + "not as long as the table's first column");
  if (!col.range_fits_type()) throw RuntimeError(what + "range '" + range_name(col.range) + "' on values of another type");
  if (col.range != ColumnRange::level) return;
  if (!col.levels_fit(rows)) {
    throw RuntimeError(what + std::to_string(col.levels.size()) + " levels for " + std::to_string(rows) +
                       " rows, or levels repeated");
  }
  for (auto i : col.ints) {
    if (i < 0 || static_cast<std::size_t>(i) >= col.levels.size()) {
      throw RuntimeError(what + std::to_string(i) + " is not one of its levels");
    }
  }
}

// A table the file cannot hold as it is, or that its reader would call damaged: its producer's mistake, refused
// before anything of the case is written.
void check_table(const CaseTable& t, const std::vector<CaseTable>& all) {
  const auto word = [](const std::string& n) { return !n.empty() && n != "." && n.find('/') == std::string::npos; };
  const std::string what = "table '" + t.name + "'";
  if (!word(t.name) || t.name == "parameters") throw RuntimeError(what + ": not a name a case's table can have");
  if (find_table(all, t.name) != &t) throw RuntimeError(what + ": two tables of that name");
  std::vector<std::string> names;  // of its datasets
  for (const auto& col : t.columns) {
    check_column(t.name, col, t.rows());
    names.push_back(col.name);
    if (col.range == ColumnRange::level) names.push_back(levels_dataset(col));
  }
  for (const auto& n : names) {
    if (!word(n) || std::count(names.begin(), names.end(), n) > 1) {
      throw RuntimeError(what + ": '" + n + "' is not a name for one of its datasets");
    }
  }
  for (const auto& [name, value] : t.attrs) {
    if (!word(name) || name == "description" || !std::isfinite(value)) {
      throw RuntimeError(what + ": attribute '" + name + "' is not a number about the table");
    }
  }
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

// Moves each column of table `name` that is on the common clock by its row's rank's shift.
void shift_clock_columns(hid_t case_group, const std::string& name, const std::vector<double>& shift) {
  H5Id t = h5::open_group(case_group, name);
  std::vector<std::int64_t> rank;
  for (const auto& col : h5::members_in_order(t.get())) {
    if (h5::is_group(t.get(), col)) continue;
    H5Id d = h5::open_dataset(t.get(), col);
    if (!h5::has_attr(d.get(), "clock") || h5::read_string_attr(d.get(), "clock") != "common") continue;
    if (rank.empty()) {
      if (!h5::exists(t.get(), "rank")) return;  // whose rows they are is not known: left as they are
      rank = h5::read_ints(t.get(), "rank");
    }
    shift_times(t.get(), col, shift, &rank);
  }
}

// `s` cut to at most `bytes` bytes, at a character's start, "..." saying so.
std::string within(const std::string& s, std::size_t bytes) {
  if (s.size() <= bytes) return s;
  std::size_t n = bytes - 3;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;  // a UTF-8 continuation byte
  return s.substr(0, n) + "...";
}

// Cuts the closed file at the end its superblock records (version 2 and on: the end-of-file address at byte
// 28, 8-byte addresses from base 0), when it is longer: flush() allocated blocks up to the end HDF5 had then,
// and HDF5 gives back its unused metadata block only when the file closes.
void trim_to_recorded_end(const std::string& path) {
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return;
  unsigned char sb[36];
  struct stat st {};
  if (pread(fd, sb, sizeof sb, 0) == static_cast<ssize_t>(sizeof sb) && fstat(fd, &st) == 0 &&
      std::memcmp(sb, "\x89HDF\r\n\x1a\n", 8) == 0 && sb[8] >= 2 && sb[9] == 8) {
    std::uint64_t base = 0, end = 0;
    for (int b = 7; b >= 0; --b) {
      base = base << 8 | sb[12 + b];
      end = end << 8 | sb[28 + b];
    }
    if (base == 0 && end > 0 && static_cast<std::uint64_t>(st.st_size) > end) {
      if (ftruncate(fd, static_cast<off_t>(end)) != 0) {
        // Left longer than needed: HDF5 reads it all the same.
      }
    }
  }
  ::close(fd);
}

// HDF5's own descriptor of an open file (the sec2 driver's, the default).
int descriptor_of(hid_t file) {
  void* handle = nullptr;
  GPUSCALE_H5(H5Fget_vfd_handle(file, H5P_DEFAULT, &handle));
  return handle ? *static_cast<int*>(handle) : -1;
}

}  // namespace

// What the files written so far take: about 1.5 KiB for a case's group, attributes and parameters, about half a
// KiB for each dataset (object header, unit and description), then the values.
constexpr std::uint64_t kCaseBytes = 1536, kDatasetBytes = 512;

std::uint64_t case_bytes(std::uint64_t ranks, std::uint64_t reps, std::uint64_t warmup_kept, int datasets) {
  // Four [ranks][reps] tables, the warm-up table, and a few values per rank.
  return kCaseBytes + kDatasetBytes * static_cast<std::uint64_t>(datasets) + 8 * ranks * (4 * reps + warmup_kept + 8);
}

// A table's datasets (its group, its columns, their levels) and the bytes of its values and attributes.
std::pair<int, std::uint64_t> table_bytes(const CaseTable& t) {
  int datasets = 1;
  std::uint64_t bytes = t.description.size() + 64 * t.attrs.size();
  for (const auto& col : t.columns) {
    datasets += col.range == ColumnRange::level ? 2 : 1;
    bytes += 96 + col.description.size() + col.unit.size();  // the attributes
    std::size_t width = 1;
    for (const auto& s : col.texts) width = std::max(width, s.size());
    bytes += col.type == ColumnType::text ? width * col.texts.size() : 8 * col.size();
    for (const auto& l : col.levels) bytes += l.size();
  }
  return {datasets, bytes};
}

std::uint64_t record_bytes(const CaseRecord& c) {
  int datasets = 8 + (c.scope ? 6 : 0);
  std::uint64_t extra = c.note.size() + c.status_reason.size() + 2 * c.experiment.size();
  for (const auto& t : c.tables) {
    if (t.rows() == 0) continue;  // not written
    const auto [d, b] = table_bytes(t);
    datasets += d;
    extra += b;
  }
  for (const auto& [k, v] : c.params.items()) extra += 64 + k.size() + to_string(v).size();
  return case_bytes(static_cast<std::uint64_t>(c.ranks), static_cast<std::uint64_t>(c.reps),
                    static_cast<std::uint64_t>(c.warmup_width), datasets) + extra;
}

std::uint64_t header_bytes(const RunRecord& run) {
  std::uint64_t text = run.config_text.size() + run.config_overrides.size() + run.command_line.size() +
                       run.software_dependencies.size() + run.backend_reason.size() + run.comm_reason.size();
  for (const auto& [k, v] : run.environment) text += 64 + k.size() + v.size();
  for (const auto& w : run.warnings) text += w.size();
  for (const auto& p : run.plan) text += 2 * (p.label.size() + 16) + 40 * p.limits.size();
  // The root's attributes, /ranks (kRankFields), /links (4), /plan (2): their headers, then a few hundred bytes of
  // numbers and strings per rank and per link.
  return 4096 + (kRankFieldCount + 6) * kDatasetBytes + text + 400 * run.ranks.size() + 128 * run.links.size();
}

ResultWriter::ResultWriter(const std::string& path, const RunRecord& run) : path_(path) {
  hdf5_quiet();
  // Every piece of metadata with a checksum (the HDF5 1.8 file format), values in checksummed places (hdf5_io.hpp).
  H5Id fcpl = h5::file_create();
  H5Id fapl = h5::file_access();
  file_ = H5Id(GPUSCALE_H5(H5Fcreate(path.c_str(), H5F_ACC_EXCL, fcpl.get(), fapl.get())), H5Fclose);
  try {
    fd_ = descriptor_of(file_.get());
    const std::uint64_t need = header_bytes(run) + kEndReserveBytes;
    if (const std::uint64_t left = free_bytes(path_); left < need) throw NoSpaceError(no_space_text(left), left);
    write_header(run);
  } catch (...) {
    // Ours alone (created exclusively), holding no case yet: nothing to keep.
    end_after_failure("");
    std::remove(path_.c_str());
    throw;
  }
}

ResultWriter::~ResultWriter() {
  // Closed as close() does, unless a write failed half-way: that file is left as the last flush wrote it.
  if (broken_) {
    end_after_failure("");
    return;
  }
  try {
    close();
  } catch (...) {
    end_after_failure("");
  }
}

void ResultWriter::write_header(const RunRecord& run) {
  const hid_t f = file_.get();
  for (const auto& w : run.warnings) warnings_ += (warnings_.empty() ? "" : "\n") + w;
  write_run_attrs(f, run, warnings_);
  write_rank_table(f, run.ranks);
  write_links(f, run.links);
  write_plan(f, run.plan);
  cases_ = h5::create_group(f, "cases");
  flush();
}

void ResultWriter::write_case(const CaseRecord& c) {
  for (const auto& t : c.tables) {
    if (t.rows() > 0) check_table(t, c.tables);
  }
  const std::uint64_t need = record_bytes(c) + kEndReserveBytes;
  if (const std::uint64_t left = free_bytes(path_); left < need) {
    throw NoSpaceError(no_space_text(left) + ": the case needs about " + std::to_string(need) + " bytes", left);
  }
  broken_ = true;  // until this write is flushed whole
  H5Id g = h5::create_group(cases_.get(), case_group_name(c.index));
  const hid_t id = g.get();
  write_case_attrs(id, c);
  if (c.status != CaseStatus::skipped) {  // a skipped case ran nothing: no samples
    write_samples(id, c);
    for (const auto& t : c.tables) {
      if (t.rows() > 0) write_table(id, t);  // a table without rows says nothing: left out, as merge_rank_tables does
    }
    h5::write_doubles(id, "verify_error", c.verify_error, static_cast<hsize_t>(c.ranks), 0, nullptr,
                      !c.scope ? "the workload's verification error per rank (docs/metrics.md)"
                                      : "result elements that differ from the expected ones, per rank");
  }
  g.reset();
  flush();
  broken_ = false;
  ++cases_written_;
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
    for (const auto& member : h5::child_names(c.get())) {
      if (member != "parameters" && h5::is_group(c.get(), member)) shift_clock_columns(c.get(), member, shift);
    }
  }
}

void ResultWriter::finish(bool complete, const std::string& status, const std::vector<RankRecord>& ranks) {
  broken_ = true;  // until this write is flushed whole
  H5Id g = h5::open_group(file_.get(), "ranks");
  h5::overwrite_doubles(g.get(), "clock_offset_end",
                        column<double>(ranks, &RankRecord::clock_offset_end_s));
  h5::overwrite_doubles(g.get(), "clock_uncertainty_end",
                        column<double>(ranks, &RankRecord::clock_uncertainty_end_s));
  apply_better_clock(ranks);
  h5::write_attr(file_.get(), "complete", static_cast<std::int64_t>(complete ? 1 : 0));
  h5::write_attr(file_.get(), "status", status);
  flush();
  broken_ = false;
}

void ResultWriter::add_warning(const std::string& line) {
  broken_ = true;  // until this write is flushed whole
  warnings_ += (warnings_.empty() ? "" : "\n") + line;
  h5::write_attr(file_.get(), "warnings", warnings_);
  flush();
  broken_ = false;
}

void ResultWriter::write_data_plane(int communicators, double setup_s) {
  broken_ = true;  // until this write is flushed whole
  h5::write_attr(file_.get(), "dataPlaneCommunicators", static_cast<std::int64_t>(communicators));
  h5::write_attr(file_.get(), "dataPlaneSetupSeconds", setup_s);
  flush();
  broken_ = false;
}

void ResultWriter::mark_ended(const std::string& status) {
  broken_ = true;  // until this write is flushed whole
  h5::write_attr(file_.get(), "complete", std::int64_t{0});
  h5::write_attr(file_.get(), "status", status);
  flush();
  broken_ = false;
}

void ResultWriter::flush() {
  // With every flush: a file whose writer died keeps an old time, a live one a recent one.
  h5::write_attr(file_.get(), "lastUpdate", now_iso8601());
  // Every block the flush writes allocated first: a full disk fails here, with nothing of this flush on disk.
  hsize_t size = 0;
  GPUSCALE_H5(H5Fget_filesize(file_.get(), &size));
  reserve_blocks(fd_, size, path_);
  GPUSCALE_H5(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL));
}

void ResultWriter::close() {
  if (file_.get() < 0) return;
  flush();
  cases_.reset();
  GPUSCALE_H5(H5Fclose(file_.release()));
  trim_to_recorded_end(path_);
}

bool ResultWriter::end_after_failure(const std::string& status) noexcept {
  // HDF5's descriptor of the file now reads /dev/null and takes no writes, and the file is left open: closing it
  // would write what the failed call left half-done. Nothing more of it reaches the disk (the run ends soon, and
  // the library's own clean-up at exit is off: cmd_run).
  const int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd_ >= 0 && null >= 0) dup2(null, fd_);
  if (null >= 0) ::close(null);
  cases_.release();
  file_.release();
  fd_ = -1;
  if (status.empty()) return true;
  try {
    // Opened afresh through another driver, which HDF5 does not take for the file still open (the same path
    // through the same driver would hand back its cache), to write the status where it is: no new space.
    H5Id fapl = h5::file_access();
    GPUSCALE_H5(H5Pset_fapl_stdio(fapl.get()));
    H5Id f(GPUSCALE_H5(H5Fopen(path_.c_str(), H5F_ACC_RDWR, fapl.get())), H5Fclose);
    h5::write_attr(f.get(), "complete", std::int64_t{0});
    h5::write_attr(f.get(), "status", within(status, kStatusRoom));
    h5::write_attr(f.get(), "lastUpdate", now_iso8601());
    return H5Fclose(f.release()) >= 0;
  } catch (...) {
    return false;
  }
}

}  // namespace gpuscale
