// A case's tables (io/case_table.hpp) in tests: the runner's "phases" and
// "telemetry" and the node-pair sweep's "pairs", built as the runner builds
// them (each rank's table, merged into one on rank 0, then the workload's
// finish), a phases table read back as rows, and two tables compared column
// by column. For Catch2 test cases only: the readers REQUIRE what they need.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "comm/groups.hpp"
#include "device/cpu_device.hpp"
#include "io/case_table.hpp"
#include "io/result_model.hpp"
#include "runner/case_tables.hpp"
#include "runner/sample_timer.hpp"
#include "telemetry/telemetry.hpp"
#include "workloads/node_pair_table.hpp"
#include "workloads/workload.hpp"

namespace gpuscale::testing {

// Phase intervals of every rank, one row each: what a phases table holds.
struct PhaseRows {
  std::vector<std::string> names;                 // what the phase indices name
  std::vector<std::int64_t> rank, sample, phase;  // phase: index into names
  std::vector<double> start_s, end_s;             // common clock
  std::size_t size() const { return rank.size(); }
  const std::string& name(std::size_t i) const { return names.at(static_cast<std::size_t>(phase.at(i))); }
  void add(int r, int s, int p, double start, double end) {
    rank.push_back(r);
    sample.push_back(s);
    phase.push_back(p);
    start_s.push_back(start);
    end_s.push_back(end);
  }
};

// The phases table of `ranks` ranks as the runner gathers it: each rank's
// phases_table (its intervals, every name of p.names), merged.
inline CaseTable phases_table_of(const PhaseRows& p, int ranks) {
  std::vector<std::vector<CaseTable>> per_rank(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    SampleTimes t;
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (p.rank[i] != r) continue;
      t.phase_sample.push_back(p.sample[i]);
      t.phase.push_back(p.phase[i]);
      t.phase_start.push_back(p.start_s[i]);
      t.phase_end.push_back(p.end_s[i]);
    }
    per_rank[static_cast<std::size_t>(r)].push_back(phases_table(t, p.names));
  }
  const std::vector<CaseTable> merged = merge_rank_tables(per_rank);
  REQUIRE(merged.size() == 1);
  return merged[0];
}

// The telemetry table as the runner gathers it: rank r's readings per_rank[r], taken every `interval_s`.
inline CaseTable telemetry_table_of(const std::vector<std::vector<TelemetrySample>>& per_rank, double interval_s) {
  std::vector<std::vector<CaseTable>> tables;
  for (const auto& readings : per_rank) tables.push_back({telemetry_table(readings, interval_s)});
  const std::vector<CaseTable> merged = merge_rank_tables(tables);
  REQUIRE(merged.size() == 1);
  return merged[0];
}

// The pairs table of a sweep over `nodes` nodes of `per_node` ranks each
// (local rank 0 of each in the sweep, node k called host(k)), as the runner
// makes it: each rank's row (node_pair_rank_rows), gathered, then the
// schedule (node_pair_schedule).
inline CaseTable pairs_table_of(int nodes, int per_node, const std::function<std::string(int)>& host) {
  CpuDevice dev;
  std::vector<std::vector<CaseTable>> per_rank;
  for (int r = 0; r < nodes * per_node; ++r) {
    const bool in = r % per_node == 0;
    Group g;
    g.scope = Scope::node_pairs;
    g.index = in ? 0 : -1;
    g.rank = in ? r / per_node : -1;
    g.size = in ? nodes : 0;
    CaseContext ctx{dev};
    ctx.group = &g;
    ctx.nodes = nodes;
    ctx.node_index = r / per_node;
    ctx.hostname = host(r / per_node);
    ctx.world_rank = r;
    per_rank.push_back(node_pair_rank_rows(ctx));
  }
  std::vector<CaseTable> tables = merge_rank_tables(per_rank);
  node_pair_schedule(tables);
  REQUIRE(tables.size() == 1);
  REQUIRE(tables[0].name == kPairsTable);
  return tables[0];
}

// The case's table of that name, which must be there.
inline const CaseTable& table_of(const CaseRecord& c, const std::string& name) {
  const CaseTable* t = find_table(c.tables, name);
  INFO("case " << c.index << ", table '" << name << "'");
  REQUIRE(t != nullptr);
  return *t;
}

// The rows of a phases table, its columns checked against what the runner writes.
inline PhaseRows phase_rows(const CaseTable& t) {
  CHECK(t.name == kPhasesTable);
  const auto col = columns_of(t, {{"rank", ColumnType::integer},
                                  {"sample", ColumnType::integer},
                                  {"phase", ColumnType::integer},
                                  {"start", ColumnType::real},
                                  {"end", ColumnType::real}});
  REQUIRE(col.size() == 5);
  CHECK(col[0]->range == ColumnRange::rank);
  CHECK(col[1]->range == ColumnRange::sample);
  CHECK(col[2]->range == ColumnRange::level);
  CHECK(col[2]->levels_name == "names");
  CHECK(col[3]->common_clock);
  CHECK(col[4]->common_clock);
  PhaseRows p;
  p.names = col[2]->levels;
  p.rank = col[0]->ints;
  p.sample = col[1]->ints;
  p.phase = col[2]->ints;
  p.start_s = col[3]->reals;
  p.end_s = col[4]->reals;
  REQUIRE(std::all_of(p.phase.begin(), p.phase.end(),
                      [&](std::int64_t k) { return k >= 0 && static_cast<std::size_t>(k) < p.names.size(); }));
  return p;
}
inline PhaseRows phase_rows(const CaseRecord& c) { return phase_rows(table_of(c, kPhasesTable)); }

// Two tables alike: name, description, attributes, and each column's name,
// type, unit, description, range, clock, values (NaN equal to NaN) and levels.
inline void check_same_table(const CaseTable& got, const CaseTable& want) {
  INFO("table " << want.name);
  CHECK(got.name == want.name);
  CHECK(got.description == want.description);
  CHECK(got.attrs == want.attrs);
  REQUIRE(got.columns.size() == want.columns.size());
  for (std::size_t k = 0; k < want.columns.size(); ++k) {
    const TableColumn &g = got.columns[k], &w = want.columns[k];
    INFO("column " << w.name);
    CHECK(g.name == w.name);
    CHECK(g.type == w.type);
    CHECK(g.unit == w.unit);
    CHECK(g.unit_si == w.unit_si);
    CHECK(g.description == w.description);
    CHECK(g.range == w.range);
    CHECK(g.common_clock == w.common_clock);
    CHECK(g.ints == w.ints);
    CHECK(g.texts == w.texts);
    REQUIRE(g.reals.size() == w.reals.size());
    for (std::size_t i = 0; i < w.reals.size(); ++i) {
      CHECK(((std::isnan(g.reals[i]) && std::isnan(w.reals[i])) || g.reals[i] == w.reals[i]));
    }
    CHECK(g.levels == w.levels);
    CHECK(g.levels_name == w.levels_name);
  }
}

}  // namespace gpuscale::testing
