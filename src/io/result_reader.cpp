#include "io/result_reader.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <new>
#include <set>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>
#include <variant>

#include "comm/scope.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/text.hpp"
#include "io/hdf5_io.hpp"
#include "io/rank_fields.hpp"

namespace gpuscale {

namespace {

using h5::ReadError;

// Bounds beyond which a count can only come from a damaged file.
constexpr std::int64_t kMaxRanks = 1 << 24;
constexpr std::int64_t kMaxIndex = 1LL << 40;

std::string num(std::int64_t v) { return std::to_string(v); }

// An integer attribute in [lo, hi].
std::int64_t int_in(hid_t obj, const std::string& name, std::int64_t lo, std::int64_t hi, const std::string& where) {
  const std::int64_t v = h5::read_int_attr(obj, name);
  if (v < lo || v > hi) {
    throw ReadError(where + ": attribute '" + name + "' is " + num(v) + ", outside " + num(lo) + ".." + num(hi));
  }
  return v;
}

double finite_at_least_zero(hid_t obj, const std::string& name, const std::string& where) {
  const double v = h5::read_double_attr(obj, name);
  if (!(std::isfinite(v) && v >= 0)) throw ReadError(where + ": attribute '" + name + "' is not a number >= 0");
  return v;
}

std::string child(const std::string& where, const std::string& name) { return where + "/" + name; }

// Every entry of an integer column in [lo, hi].
void ints_in(const std::vector<std::int64_t>& v, std::int64_t lo, std::int64_t hi, const std::string& what) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] < lo || v[i] > hi) {
      throw ReadError(what + "[" + std::to_string(i) + "] is " + num(v[i]) + ", outside " + num(lo) + ".." + num(hi));
    }
  }
}

// Every entry finite (and >= 0 when asked).
void finite(const std::vector<double>& v, bool non_negative, const std::string& what) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i]) || (non_negative && v[i] < 0)) {
      throw ReadError(what + "[" + std::to_string(i) + "] is " + (std::isfinite(v[i]) ? "negative" : "not finite"));
    }
  }
}

// A column of one entry per rank, or of none (written from a record without it).
template <class T>
std::vector<T> per_rank(std::vector<T> v, std::size_t ranks, const std::string& what) {
  if (!v.empty() && v.size() != ranks) {
    throw ReadError(what + " holds " + std::to_string(v.size()) + " values, " + std::to_string(ranks) +
                    " (one per rank) expected");
  }
  return v;
}

int narrow(std::int64_t v) { return static_cast<int>(v); }  // after a range check

std::string case_group_name(std::int64_t index) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04lld", static_cast<long long>(index));
  return buf;
}

// /plan: one label and limits per planned case, as many as casesPlanned says.
void read_plan(hid_t f, RunRecord& run) {
  H5Id g = h5::open_group(f, "plan");
  const auto label = h5::read_strings(g.get(), "label", run.cases_planned);
  const auto limits = h5::read_strings(g.get(), "limits", run.cases_planned);
  for (std::size_t i = 0; i < label.size(); ++i) {
    PlannedCase p{label[i], {}};
    const std::string& text = limits[i];  // "max_median_s=0.5 min_efficiency=0.8"
    for (std::size_t from = 0; from < text.size();) {
      const std::size_t sp = std::min(text.find(' ', from), text.size()), eq = text.find('=', from);
      char* end = nullptr;
      const double v = eq < sp ? std::strtod(text.c_str() + eq + 1, &end) : NAN;
      if (eq >= sp || end != text.c_str() + sp || std::isnan(v)) {
        throw ReadError("/plan/limits[" + std::to_string(i) + "] is not a list of NAME=NUMBER");
      }
      p.limits.emplace_back(text.substr(from, eq - from), v);
      from = sp + 1;
    }
    run.plan.push_back(std::move(p));
  }
}

// The case groups against the plan: each one a planned case (NNNN below casesPlanned), and, in a run marked
// complete, every planned case there. Files that do not say how many were planned are taken as they are.
void check_cases_planned(const std::vector<std::string>& names, const RunRecord& run) {
  if (run.cases_planned == 0) return;
  std::vector<bool> seen(run.cases_planned, false);
  for (const auto& name : names) {
    const bool digits = !name.empty() && name.find_first_not_of("0123456789") == std::string::npos && name.size() < 12;
    const long long index = digits ? std::atoll(name.c_str()) : -1;
    if (index < 0 || static_cast<std::size_t>(index) >= run.cases_planned || case_group_name(index) != name) {
      throw ReadError("/cases/" + name + " is not one of the " + std::to_string(run.cases_planned) +
                      " planned cases (casesPlanned)");
    }
    seen[static_cast<std::size_t>(index)] = true;
  }
  if (!run.complete) return;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    if (!seen[i]) {
      throw ReadError("the run is marked complete, but case " + std::to_string(i + 1) + " of " +
                      std::to_string(run.cases_planned) + " (/cases/" + case_group_name(static_cast<std::int64_t>(i)) +
                      ") is missing");
    }
  }
}

// What a file older than this reader reads is, after "PATH: ...".
std::string older_than_read() {
  const std::string ours(kSchemaVersion);
  return "older than this gpuscale reads (" + ours.substr(0, ours.find('.') + 1) + std::to_string(kOldestMinorRead) +
         " on); gpuscale up to commit " + kLastReaderOfOlder + " reads it";
}

// The schema version, MAJOR.MINOR, of a major version this reader reads, from kOldestMinorRead on.
std::string read_schema_version(hid_t f, const std::string& path) {
  const std::string v = h5::read_string_attr(f, "schemaVersion");
  const std::size_t dot = v.find('.');
  const auto digits = [](const std::string& x) {
    return !x.empty() && x.size() < 6 && x.find_first_not_of("0123456789") == std::string::npos;
  };
  if (dot == std::string::npos || !digits(v.substr(0, dot)) || !digits(v.substr(dot + 1))) {
    throw ReadError("/: attribute 'schemaVersion' is '" + v + "', not a version (MAJOR.MINOR)");
  }
  const std::string ours(kSchemaVersion);
  if (v.substr(0, dot) != ours.substr(0, ours.find('.'))) {
    throw InputError(path + ": schemaVersion " + v + " is not readable by this gpuscale (reads " + kSchemaVersion +
                     ")");
  }
  if (std::atoi(v.c_str() + dot + 1) < kOldestMinorRead) {
    throw InputError(path + ": schemaVersion " + v + " is " + older_than_read());
  }
  return v;
}

// Whether a version read_schema_version accepted is older than major.minor.
bool schema_before(const std::string& v, int major, int minor) {
  const int ma = std::atoi(v.c_str()), mi = std::atoi(v.c_str() + v.find('.') + 1);
  return ma < major || (ma == major && mi < minor);
}

// The backend and the data plane a file names, as backend_name and comm_name write them.
Backend read_backend(hid_t id, const std::string& where) {
  const std::string s = h5::read_string_attr(id, "backend");
  const std::optional<Backend> b = parse_backend(s);
  if (!b) throw ReadError(where + ": attribute 'backend' is '" + s + "', neither cpu nor cuda");
  return *b;
}
// "" (none: a case whose group had no data plane here) reads as none.
std::optional<CommKind> read_comm(hid_t id, const std::string& where) {
  const std::string s = h5::read_string_attr(id, "comm");
  const std::optional<CommKind> c = parse_comm(s);
  if (!c && !s.empty()) throw ReadError(where + ": attribute 'comm' is '" + s + "', neither mpi nor nccl");
  return c;
}

// "name=value" lines (schema 1.10 on), as write_run_attrs writes them.
std::vector<std::pair<std::string, std::string>> read_mpi_settings(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const std::size_t eq = line.find('=');
    if (eq == 0 || eq == std::string::npos) {
      throw ReadError("/: attribute 'mpiSettings' has the line '" + printable(line) + "', not NAME=VALUE");
    }
    out.emplace_back(line.substr(0, eq), line.substr(eq + 1));
  }
  return out;
}

// The root's attributes after its schema version.
void read_root_attrs(hid_t f, RunRecord& run) {
  run.software_version = h5::read_string_attr(f, "softwareVersion");
  run.date = h5::read_string_attr(f, "date");
  run.software_dependencies = h5::read_string_attr(f, "softwareDependencies");
  run.mpi_library = h5::read_string_attr(f, "mpiLibrary");
  if (h5::has_attr(f, "mpiSettings")) run.mpi_settings = read_mpi_settings(h5::read_string_attr(f, "mpiSettings"));
  if (h5::has_attr(f, "dataPlaneSetupSeconds")) {
    run.data_plane_communicators = static_cast<int>(h5::read_int_attr(f, "dataPlaneCommunicators"));
    run.data_plane_setup_s = h5::read_double_attr(f, "dataPlaneSetupSeconds");
  }
  run.command_line = h5::read_string_attr(f, "commandLine", true);
  run.config_file = h5::read_string_attr(f, "configFile", true);
  run.config_text = h5::read_string_attr(f, "config", true);
  run.config_overrides = h5::read_string_attr(f, "configOverrides", true);
  run.backend = read_backend(f, "/");
  run.backend_reason = h5::read_string_attr(f, "backendReason");
  run.comm = read_comm(f, "/");
  run.comm_reason = h5::read_string_attr(f, "commReason");
  run.slurm_job_id = h5::read_string_attr(f, "slurmJobId");
  const std::string w = h5::read_string_attr(f, "warnings");
  for (std::size_t from = 0; from < w.size();) {
    const std::size_t nl = std::min(w.find('\n', from), w.size());
    run.warnings.push_back(w.substr(from, nl - from));
    from = nl + 1;
  }
  run.nodes = narrow(int_in(f, "nodes", 1, kMaxRanks, "/"));
  run.complete = int_in(f, "complete", 0, 1, "/") != 0;
  run.cases_planned = static_cast<std::size_t>(int_in(f, "casesPlanned", 0, kMaxIndex, "/"));
  run.last_update = h5::read_string_attr(f, "lastUpdate");
  run.status = h5::read_string_attr(f, "status");
}

void read_environment(hid_t f, RunRecord& run) {
  H5Id env = h5::open_group(f, "environment");
  for (const auto& k : h5::attr_names(env.get())) {
    run.environment.emplace_back(k, h5::read_string_attr(env.get(), k, true));
  }
}

// The bounds an int column's values are checked against, n being the run's ranks.
std::pair<std::int64_t, std::int64_t> rank_bounds(RankRange range, std::size_t n) {
  const auto ranks = static_cast<std::int64_t>(n);
  switch (range) {
    case RankRange::count: return {0, INT_MAX};
    case RankRange::index: return {0, ranks - 1};
    case RankRange::size: return {1, ranks};
    case RankRange::fits: break;
  }
  return {INT_MIN, INT_MAX};
}

// Column `field` of /ranks into `rows`, one value per row.
void read_rank_field(hid_t id, const RankField& field, std::vector<RankRecord>& rows) {
  const std::size_t n = rows.size();
  std::visit(
      [&](auto member) {
        using T = RankValue<decltype(member)>;
        const auto v = [&] {
          if constexpr (std::is_same_v<T, std::string>) {
            return h5::read_strings(id, field.name, n);
          } else if constexpr (std::is_same_v<T, double>) {
            return h5::read_doubles(id, field.name, n);
          } else {
            return h5::read_ints(id, field.name, n);
          }
        }();
        if constexpr (std::is_same_v<T, int>) {
          const auto [lo, hi] = rank_bounds(field.range, n);
          ints_in(v, lo, hi, std::string("/ranks/") + field.name);
        }
        for (std::size_t r = 0; r < n; ++r) rows[r].*member = static_cast<T>(v[r]);  // after the range check
      },
      field.member);
}

// The rank count, as /ranks' first column says it: some, not absurdly many, as many as the root says.
void check_rank_count(hid_t f, std::size_t n, const RunRecord& run) {
  const std::string first = std::string("/ranks/") + kRankFields[0].name;
  if (n == 0) throw ReadError(first + " is empty: no ranks");
  if (n > static_cast<std::size_t>(kMaxRanks)) throw ReadError(first + " holds " + std::to_string(n) + " ranks");
  int_in(f, "ranks", static_cast<std::int64_t>(n), static_cast<std::int64_t>(n), "/");
  if (run.nodes > static_cast<int>(n)) {
    throw ReadError("/: attribute 'nodes' is " + num(run.nodes) + ", more than its " + std::to_string(n) + " ranks");
  }
}

// /ranks: one row per rank, as many as its first column holds; a later schema's columns where the file has them.
void read_ranks(hid_t f, RunRecord& run) {
  H5Id g = h5::open_group(f, "ranks");
  const hid_t id = g.get();
  const RankField& first = kRankFields[0];
  const auto values = h5::read_strings(id, first.name);
  check_rank_count(f, values.size(), run);
  run.ranks.resize(values.size());
  const auto member = std::get<std::string RankRecord::*>(first.member);
  for (std::size_t r = 0; r < values.size(); ++r) run.ranks[r].*member = values[r];
  for (const RankField& field : kRankFields) {
    if (&field == &first || (field.read_with && !h5::exists(id, field.read_with))) continue;
    read_rank_field(id, field, run.ranks);
  }
}

void read_links(hid_t f, RunRecord& run) {
  H5Id g = h5::open_group(f, "links");
  const auto rank = h5::read_ints(g.get(), "rank");
  const std::size_t m = rank.size();
  ints_in(rank, 0, static_cast<std::int64_t>(run.ranks.size()) - 1, "/links/rank");
  const auto peer = h5::read_strings(g.get(), "peer_pci_bus_id", m);
  const auto nvlinks = h5::read_ints(g.get(), "nvlinks", m);
  ints_in(nvlinks, INT_MIN, INT_MAX, "/links/nvlinks");
  const auto ancestor = h5::read_strings(g.get(), "common_ancestor", m);
  for (std::size_t i = 0; i < m; ++i) run.links.push_back({narrow(rank[i]), peer[i], narrow(nvlinks[i]), ancestor[i]});
}

// The run: root attributes, environment, rank table, links, plan (cases left out).
RunRecord read_run(hid_t f, const std::string& path) {
  if (!h5::has_attr(f, "software") || h5::variable_length_string_attr(f, "software") ||
      h5::read_string_attr(f, "software") != "gpuscale") {
    throw InputError(path + ": not a gpuscale result file (no software = \"gpuscale\" attribute)");
  }
  RunRecord run;
  run.schema_version = read_schema_version(f, path);
  read_root_attrs(f, run);
  read_environment(f, run);
  read_ranks(f, run);
  read_plan(f, run);
  read_links(f, run);
  return run;
}

// ---- A case's tables ----

// What a table's column ranges refer to.
struct TableBounds {
  std::int64_t ranks, reps;  // the case's
  std::int64_t run_ranks;    // the run's: nodes are numbered below it
};

// The table's description and numbers (every other attribute, a finite number each).
void read_table_attrs(hid_t id, const std::string& tw, CaseTable& t) {
  for (const auto& k : h5::attr_names(id)) {
    if (k == "description") {
      t.description = h5::read_string_attr(id, k);
      continue;
    }
    const double v = h5::read_double_attr(id, k);
    if (!std::isfinite(v)) throw ReadError(tw + ": attribute '" + k + "' is not a finite number");
    t.attrs.emplace_back(k, v);
  }
}

// Column `name` of `table` as its attributes describe it, no values yet.
TableColumn describe_column(hid_t table, const std::string& name) {
  TableColumn col;
  col.name = name;
  H5Id d = h5::open_dataset(table, name);
  const hid_t id = d.get();
  if (h5::has_attr(id, "unit")) col.unit = h5::read_string_attr(id, "unit");
  if (h5::has_attr(id, "unitSI")) col.unit_si = h5::read_double_attr(id, "unitSI");
  if (h5::has_attr(id, "description")) col.description = h5::read_string_attr(id, "description");
  if (h5::has_attr(id, "range")) col.range = range_named(h5::read_string_attr(id, "range"));
  col.common_clock = h5::has_attr(id, "clock") && h5::read_string_attr(id, "clock") == "common";
  if (col.range == ColumnRange::level) col.levels_name = h5::read_string_attr(id, "levels");
  return col;
}

// The column's values, of the type its values have in the file.
void read_values(hid_t table, TableColumn& col, const std::string& what, h5::DigestCheck* digests) {
  switch (h5::value_class(table, col.name)) {
    case H5T_INTEGER: col.type = ColumnType::integer; break;
    case H5T_FLOAT: col.type = ColumnType::real; break;
    case H5T_STRING: col.type = ColumnType::text; break;
    default: throw ReadError(what + " holds neither integers, numbers nor strings");
  }
  switch (col.type) {
    case ColumnType::integer: col.ints = h5::read_ints(table, col.name, {}, digests); break;
    case ColumnType::real: col.reals = h5::read_doubles(table, col.name, {}, digests); break;
    case ColumnType::text: col.texts = h5::read_strings(table, col.name, {}, digests); break;
  }
}

// A level column: distinct levels, each used (never more than the rows), and every index one of them.
void check_levels(const TableColumn& col, const std::string& tw, std::size_t rows) {
  const std::string& n = col.levels_name;
  if (!col.levels_fit(rows)) {
    throw ReadError(tw + "/" + n + ": " + std::to_string(col.levels.size()) + " " + n + " for " +
                    std::to_string(rows) + " rows, or " + n + " repeated");
  }
  ints_in(col.ints, 0, static_cast<std::int64_t>(col.levels.size()) - 1, child(tw, col.name));
}

// Every value of the column within its range.
void check_range(const TableColumn& col, const std::string& tw, std::size_t rows, const TableBounds& b) {
  const std::string what = child(tw, col.name);
  if (col.range == ColumnRange::any) return;
  if (!col.range_fits_type()) {
    const char* on = col.range == ColumnRange::finite ? "strings" : "values that are not integers";
    throw ReadError(what + ": range '" + range_name(col.range) + "' on " + on);
  }
  if (col.range == ColumnRange::finite) {
    finite(col.reals, false, what);
    return;
  }
  switch (col.range) {
    case ColumnRange::rank: ints_in(col.ints, 0, b.ranks - 1, what); break;
    case ColumnRange::sample: ints_in(col.ints, 0, b.reps - 1, what); break;
    case ColumnRange::node: ints_in(col.ints, 0, b.run_ranks - 1, what); break;
    case ColumnRange::positive: ints_in(col.ints, 1, INT_MAX, what); break;
    case ColumnRange::level: check_levels(col, tw, rows); break;
    default: break;
  }
}

// Table `name` of a case: its attributes, a column per dataset (other than a level column's levels), all of one
// length, each within its range.
CaseTable read_table(hid_t case_group, const std::string& name, const std::string& tw, const TableBounds& b,
                     h5::DigestCheck* digests) {
  H5Id g = h5::open_group(case_group, name);
  const hid_t id = g.get();
  CaseTable t;
  t.name = name;
  read_table_attrs(id, tw, t);
  std::vector<TableColumn> cols;
  for (const auto& m : h5::members_in_order(id)) cols.push_back(describe_column(id, m));
  std::set<std::string> levels;
  for (const auto& c : cols) {
    if (!c.levels_name.empty()) levels.insert(c.levels_name);
  }
  for (auto& c : cols) {
    if (levels.count(c.name) == 0) t.columns.push_back(std::move(c));
  }
  for (auto& col : t.columns) {
    const std::string what = child(tw, col.name);
    read_values(id, col, what, digests);
    if (col.size() != t.rows()) {
      throw ReadError(what + " holds " + std::to_string(col.size()) + " values, " + std::to_string(t.rows()) +
                      " expected");
    }
    if (!col.levels_name.empty()) col.levels = h5::read_strings(id, col.levels_name, {}, digests);
  }
  for (const auto& col : t.columns) check_range(col, tw, t.rows(), b);
  return t;
}

// Every group of the case other than its parameters is a table.
void read_tables(hid_t id, const std::string& where, const RunRecord& run, CaseRecord& c,
                 h5::DigestCheck* digests) {
  const TableBounds b{c.ranks, c.reps, static_cast<std::int64_t>(run.ranks.size())};
  for (const auto& name : h5::child_names(id)) {
    if (name == "parameters" || !h5::is_group(id, name)) continue;
    c.tables.push_back(read_table(id, name, child(where, name), b, digests));
  }
}

// ---- A case ----

// `c` emptied for the next case, its sample vectors keeping their memory.
void reset_case(CaseRecord& c) {
  CaseRecord fresh;
  for (auto m : {&CaseRecord::device_time_s, &CaseRecord::enqueue_s, &CaseRecord::wall_start_s,
                 &CaseRecord::wall_end_s, &CaseRecord::core_wait_s}) {
    fresh.*m = std::move(c.*m);
  }
  c = std::move(fresh);
}

// What the case was, its shape and its status.
void read_case_attrs(hid_t id, const std::string& name, const std::string& where, const RunRecord& run,
                     CaseRecord& c) {
  const std::int64_t index = int_in(id, "index", 0, kMaxIndex, where);
  if (case_group_name(index) != name) throw ReadError(where + ": attribute 'index' is " + num(index));
  c.index = static_cast<std::size_t>(index);
  c.experiment = h5::read_string_attr(id, "name");
  c.workload = h5::read_string_attr(id, "workload");
  const std::string mode = h5::read_string_attr(id, "mode");
  const std::optional<Mode> parsed_mode = parse_mode(mode);
  if (!parsed_mode) throw ReadError(where + ": attribute 'mode' is '" + mode + "', neither serial nor parallel");
  c.mode = *parsed_mode;
  c.backend = read_backend(id, where);
  const std::string status = h5::read_string_attr(id, "status");
  const std::optional<CaseStatus> parsed = parse_status(status);
  if (!parsed) throw ReadError(where + ": attribute 'status' is '" + status + "', not ok, verify-failed or skipped");
  c.status = *parsed;
  c.status_reason = h5::read_string_attr(id, "status_reason");
  c.note = h5::read_string_attr(id, "note");
  const auto n = static_cast<std::int64_t>(run.ranks.size());
  c.ranks = narrow(int_in(id, "ranks", 1, n, where));
  c.nodes = narrow(int_in(id, "nodes", 1, c.ranks, where));
  c.reps = narrow(int_in(id, "reps", 0, INT_MAX, where));
  c.warmup = narrow(int_in(id, "warmup", 0, INT_MAX, where));
  c.flops_per_sample = finite_at_least_zero(id, "flops_per_sample", where);
  c.bytes_per_sample = finite_at_least_zero(id, "bytes_per_sample", where);
  c.verify_tolerance = h5::read_double_attr(id, "verify_tolerance");
}

void read_parameters(hid_t id, const std::string& where, CaseRecord& c) {
  H5Id p = h5::open_group(id, "parameters");
  for (const auto& k : h5::attr_names(p.get())) c.params.set(k, h5::read_value_attr(p.get(), k));
  // What the report reads as integers.
  for (const char* k : {"iters", "group_size"}) {
    if (!c.params.has(k)) continue;
    const auto* v = std::get_if<std::int64_t>(&c.params.at(k));
    if (!v || *v < 1 || *v > INT_MAX) throw ReadError(where + "/parameters: attribute '" + k + "' is not a count");
  }
}

// The experiment's limits.
void read_expect(hid_t id, const std::string& where, CaseRecord& c) {
  for (const auto& k : h5::attr_names(id)) {
    if (k.rfind(kExpectPrefix, 0) != 0) continue;
    const double v = h5::read_double_attr(id, k);
    if (std::isnan(v)) throw ReadError(where + ": attribute '" + k + "' is not a number");
    c.expect.emplace_back(k.substr(std::string(kExpectPrefix).size()), v);
  }
}

// Transfers: the scope and each rank's group in it.
void read_scope(hid_t id, const std::string& where, CaseRecord& c, h5::DigestCheck* digests) {
  if (!h5::has_attr(id, "scope")) return;
  const auto ranks = static_cast<std::size_t>(c.ranks);
  const std::string scope = h5::read_string_attr(id, "scope");
  try {
    c.scope = parse_scope(scope);
  } catch (const std::invalid_argument&) {
    throw ReadError(where + ": attribute 'scope' is '" + scope + "'");
  }
  c.comm = read_comm(id, where);
  c.groups = narrow(int_in(id, "groups", 0, c.ranks, where));
  c.group = per_rank(h5::read_ints(id, "group", {}, digests), ranks, child(where, "group"));
  ints_in(c.group, -1, c.groups - 1, child(where, "group"));
  c.group_size = per_rank(h5::read_ints(id, "group_size", {}, digests), ranks, child(where, "group_size"));
  ints_in(c.group_size, 0, c.ranks, child(where, "group_size"));
  c.group_rank = per_rank(h5::read_ints(id, "group_rank", {}, digests), ranks, child(where, "group_rank"));
  ints_in(c.group_rank, -1, c.ranks - 1, child(where, "group_rank"));
}

// The timed samples, [ranks][reps] each (core_wait: schema 1.9 on), and the verification per rank.
void read_samples(hid_t id, const std::string& where, CaseRecord& c, bool core_wait, h5::DigestCheck* digests) {
  const auto ranks = static_cast<std::size_t>(c.ranks);
  const std::size_t samples = ranks * static_cast<std::size_t>(c.reps);
  h5::read_doubles_into(id, "device_time", samples, c.device_time_s, h5::Values::finite_non_negative, digests);
  h5::read_doubles_into(id, "enqueue_time", samples, c.enqueue_s, h5::Values::finite_non_negative, digests);
  if (core_wait) {  // schema 1.9 on
    h5::read_doubles_into(id, "core_wait", samples, c.core_wait_s, h5::Values::unknown_or_non_negative, digests);
  } else {
    c.core_wait_s.clear();
  }
  h5::read_doubles_into(id, "wall_start", samples, c.wall_start_s, h5::Values::finite, digests);
  h5::read_doubles_into(id, "wall_end", samples, c.wall_end_s, h5::Values::finite, digests);
  const double *s0 = c.wall_start_s.data(), *e0 = c.wall_end_s.data();
  bool ordered = true;
  for (std::size_t i = 0; i < samples; ++i) ordered &= e0[i] >= s0[i];
  for (std::size_t i = 0; !ordered && i < samples; ++i) {
    if (e0[i] < s0[i]) throw ReadError(where + "/wall_end[" + std::to_string(i) + "] is before its wall_start");
  }
  c.verify_error = per_rank(h5::read_doubles(id, "verify_error", {}, digests), ranks, child(where, "verify_error"));
}

// Serial turns and the warm-up.
void read_turns_and_warmup(hid_t id, const std::string& where, CaseRecord& c, h5::DigestCheck* digests) {
  const auto ranks = static_cast<std::size_t>(c.ranks);
  c.turn = per_rank(h5::read_ints(id, "turn", {}, digests), ranks, child(where, "turn"));
  ints_in(c.turn, 0, c.ranks - 1, child(where, "turn"));
  c.warmup_samples = per_rank(h5::read_ints(id, "warmup_samples", {}, digests), ranks, child(where, "warmup_samples"));
  ints_in(c.warmup_samples, 0, LLONG_MAX, child(where, "warmup_samples"));
  if (h5::exists(id, "warmup_device_time")) {
    const auto dims = h5::shape(id, "warmup_device_time");
    if (dims.size() != 2 || dims[0] != ranks || dims[1] > static_cast<hsize_t>(INT_MAX)) {
      throw ReadError(where + "/warmup_device_time is not of shape [ranks][samples]");
    }
    c.warmup_width = static_cast<int>(dims[1]);
    c.warmup_device_time_s = h5::read_doubles(id, "warmup_device_time", ranks * dims[1], digests);
  }
}

// Transfers: what each rank's verification found and the bytes of its operation.
void read_transfers(hid_t id, const std::string& where, CaseRecord& c, h5::DigestCheck* digests) {
  const auto ranks = static_cast<std::size_t>(c.ranks);
  c.wrong_elements = per_rank(h5::read_ints(id, "wrong_elements", {}, digests), ranks, child(where, "wrong_elements"));
  ints_in(c.wrong_elements, 0, LLONG_MAX, child(where, "wrong_elements"));
  c.op_bytes = per_rank(h5::read_doubles(id, "op_bytes", {}, digests), ranks, child(where, "op_bytes"));
  finite(c.op_bytes, true, child(where, "op_bytes"));
  c.bus_factor = per_rank(h5::read_doubles(id, "bus_factor", {}, digests), ranks, child(where, "bus_factor"));
  finite(c.bus_factor, true, child(where, "bus_factor"));
}

// Reads /cases/<name> into `c` and checks what the report relies on. `c`'s
// sample vectors keep their memory (the last case's): no allocation, no page
// faults when this case has as many samples. Schema 1.7 on, the digest of each
// dataset read, last: a value out of range is named as such first.
void read_case(hid_t cases, const std::string& name, const RunRecord& run, CaseRecord& c) {
  const std::string where = "/cases/" + name;
  H5Id g = h5::open_group(cases, name);
  const hid_t id = g.get();
  reset_case(c);
  read_case_attrs(id, name, where, run, c);
  h5::DigestCheck check;
  h5::DigestCheck* digests = &check;
  read_parameters(id, where, c);
  read_expect(id, where, c);
  read_scope(id, where, c, digests);
  if (c.status == CaseStatus::skipped) {  // nothing ran: no samples
    c.reps = 0;
    for (auto m : {&CaseRecord::device_time_s, &CaseRecord::enqueue_s, &CaseRecord::wall_start_s,
                   &CaseRecord::wall_end_s, &CaseRecord::core_wait_s}) {
      (c.*m).clear();
    }
    return check.check();
  }
  if (c.reps < 1) throw ReadError(where + ": attribute 'reps' is 0 in a case that ran");
  read_samples(id, where, c, !schema_before(run.schema_version, 1, 9), digests);
  read_turns_and_warmup(id, where, c, digests);
  read_tables(id, where, run, c, digests);
  if (c.scope) read_transfers(id, where, c, digests);
  check.check();
}

// "truncated file: eof = 1000, sblock->base_addr = 0, stored_eof = 2000" (HDF5's words) in user terms.
std::string truncation(const std::string& reasons, const std::string& path) {
  struct stat st {};
  const long long size = stat(path.c_str(), &st) == 0 ? static_cast<long long>(st.st_size) : -1;
  const std::size_t at = reasons.find("stored_eof = ");
  std::string out = "truncated (file is " + std::to_string(size) + " bytes";
  if (at != std::string::npos) {
    const long long want = std::atoll(reasons.c_str() + at + 13);
    if (want > 0) out += ", expected " + std::to_string(want);
  }
  return out + ")";
}

// What an HDF5 failure on opening the file says about it.
std::string open_failure(const Hdf5Error& e, const std::string& path) {
  const std::string& r = e.reasons();
  if (r.find("truncated file") != std::string::npos) return truncation(r, path);
  return h5::read_error(e, "the superblock or the root group").what();
}

// A failure of the file itself, not of the visitor: what reading a live file again can cure.
class FileError : public InputError {
 public:
  using InputError::InputError;
};

// Runs `f` (a read of the file) and turns what it finds wrong into one
// FileError: "PATH: damaged result file: ...".
template <class F>
auto reading(const std::string& path, F&& f) -> decltype(f()) {
  const auto damaged = [&](const std::string& what) { return FileError(path + ": damaged result file: " + what); };
  try {
    return f();
  } catch (const InputError& e) {
    throw FileError(e.what());
  } catch (const ReadError& e) {
    throw damaged(e.what());
  } catch (const Hdf5Error& e) {
    throw damaged(h5::read_error(e, "it").what());
  } catch (const std::bad_alloc&) {
    throw damaged("it asks for more memory than there is");
  } catch (const std::exception& e) {
    throw damaged(e.what());
  }
}

// The version of the file's superblock, found where HDF5 looks for its signature (byte 0, 512, 1024, ...); -1:
// none found.
int superblock_version(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  const auto size = static_cast<long long>(in.tellg());
  for (long long at = 0; in && at + 9 <= size; at = at == 0 ? 512 : 2 * at) {
    char b[9];
    if (in.seekg(at).read(b, sizeof b) && std::memcmp(b, "\x89HDF\r\n\x1a\n", 8) == 0) {
      return static_cast<unsigned char>(b[8]);
    }
  }
  return -1;
}

// Opens the file read-only without HDF5's file locking: the writer of a live
// run holds the lock (exclusive) from creating the file to closing it, and
// reading never needs it. A file in HDF5's earliest format (no checksums, its
// strings in heaps on which the library can loop) is refused before the library
// reads more than its superblock.
H5Id open_file(const std::string& path) {
  const htri_t is = H5Fis_hdf5(path.c_str());
  if (is <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError(path + ": not an HDF5 file");
  }
  if (const int v = superblock_version(path); v == 0 || v == 1) {
    throw InputError(path + ": not a result file this gpuscale reads: superblock version " + std::to_string(v) +
                     ", HDF5's earliest file format (another program's file, a gpuscale file before schema 1.4, which "
                     "gpuscale up to commit " + kLastReaderOfOlder + " reads, or a damaged one)");
  }
  H5Id fapl(GPUSCALE_H5(H5Pcreate(H5P_FILE_ACCESS)), H5Pclose);
  GPUSCALE_H5(H5Pset_file_locking(fapl.get(), false, true));
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get());
  if (id < 0) {
    try {
      GPUSCALE_H5(id);
    } catch (const Hdf5Error& e) {
      throw ReadError(open_failure(e, path));
    }
  }
  H5Id file(id, H5Fclose);
  return file;
}

using Visit = std::function<void(const RunRecord& run, CaseRecord&& c)>;

// Cases of at least this many samples are visited on a second thread where that is asked for.
constexpr double kAheadSamples = 1 << 16;

// Each case read, visited in turn: here, or (`ahead`) on a second thread while the next case is read, so that
// reading and what the visit computes overlap. One visit at a time, in order; a case visited on the second thread
// is held in `spare`, whose memory (the case before last's) the reader takes in exchange. `last` names the last
// case visited.
class Visits {
 public:
  Visits(const Visit& visit, const RunRecord& run, CaseRecord& spare, std::string& last)
      : visit_(visit), run_(run), spare_(spare), last_(last) {}
  Visits(const Visits&) = delete;
  Visits& operator=(const Visits&) = delete;
  ~Visits() {
    if (pending_.valid()) pending_.wait();  // unwinding: the visit under way ends before what it reads
  }

  // Visits `c`, just read (its memory may be exchanged for spare's), named `name`. finish() first.
  void start(CaseRecord& c, const std::string& name, bool ahead) {
    if (ahead) {
      std::swap(c, spare_);
      try {
        pending_ = std::async(std::launch::async, [this] { visit_(run_, std::move(spare_)); });
        name_ = name;
        return;
      } catch (const std::system_error&) {  // no second thread: visit it here
        std::swap(c, spare_);
      }
    }
    visit_(run_, std::move(c));  // outside reading(): a failure there is not the file's
    last_ = name;
  }

  // Waits for the visit under way, if any; its exception passes through here.
  void finish() {
    if (!pending_.valid()) return;
    pending_.get();
    last_ = name_;
  }

 private:
  const Visit& visit_;
  const RunRecord& run_;
  CaseRecord& spare_;
  std::string& last_;
  std::future<void> pending_;
  std::string name_;
};

// Reads the file once, opened afresh: its run, then each case after `last`
// (the name of the last case visited before, if any) read and visited in
// turn, `last` kept up to date.
RunRecord read_pass(const std::string& path, CaseRecord& c, CaseRecord& spare, std::string& last, const Visit& visit,
                    bool ahead) {
  const H5Id file = reading(path, [&] { return open_file(path); });
  const hid_t f = file.get();
  RunRecord run = reading(path, [&] { return read_run(f, path); });
  const H5Id cases = reading(path, [&] { return h5::open_group(f, "cases"); });
  const std::vector<std::string> names = reading(path, [&] {
    auto found = h5::child_names(cases.get());
    check_cases_planned(found, run);
    return found;
  });
  Visits visits(visit, run, spare, last);  // after `run`: no visit outlives it, however the reading ends
  for (const auto& name : names) {  // sorted: the cases in order
    if (!last.empty() && name <= last) continue;
    try {
      reading(path, [&] { read_case(cases.get(), name, run, c); });
    } catch (...) {
      visits.finish();  // the case before was visited: a pass after this one starts after it
      throw;
    }
    visits.finish();
    visits.start(c, name, ahead && static_cast<double>(c.ranks) * static_cast<double>(c.reps) >= kAheadSamples);
  }
  visits.finish();
  return run;
}

// A live file can be read while its writer flushes a case, half old and half
// new: read again from the case that failed, after a pause that doubles, for
// about 3 s in all before the damage is believed.
constexpr int kLivePasses = 6;
constexpr std::chrono::milliseconds kLivePause{100};

}  // namespace

bool being_written(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  bool held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  struct flock probe {};
  probe.l_type = F_RDLCK;
  probe.l_whence = SEEK_SET;  // the whole file: start 0, length 0
  held = held || (fcntl(fd, F_OFD_GETLK, &probe) == 0 && probe.l_type != F_UNLCK);
  close(fd);  // and with it the probe's own lock
  return held;
}

RunRecord read_result_file(const std::string& path, const Visit& visit, VisitOn on) {
  hdf5_quiet();
  hdf5_refuse_external_links();
  check_input_file(path, "result file");
  CaseRecord c, spare;  // one at a time (two with VisitOn::either_thread), their sample memory reused by the next
  std::string last;
  for (int pass = 1;; ++pass) {
    const bool live = being_written(path);
    try {
      RunRecord run = read_pass(path, c, spare, last, visit, on == VisitOn::either_thread);
      run.being_written = live;
      return run;
    } catch (const FileError& e) {
      if (!live) throw;
      if (pass == kLivePasses) throw InputError(std::string(e.what()) + " (read while a run was writing it)");
    }
    std::this_thread::sleep_for(kLivePause * (1 << (pass - 1)));
  }
}

RunRecord read_result_file(const std::string& path) {
  std::vector<CaseRecord> cases;
  RunRecord run = read_result_file(path, [&](const RunRecord&, CaseRecord&& c) { cases.push_back(std::move(c)); });
  run.cases = std::move(cases);
  return run;
}

}  // namespace gpuscale
