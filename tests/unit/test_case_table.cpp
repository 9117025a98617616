// A case's tables: the ranks' tables merged into one per name, and tables as bytes between ranks and back.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/error.hpp"
#include "io/case_table.hpp"

using namespace gpuscale;

namespace {

// One rank's phases: which phase (a level) each of its intervals was, and when it started.
CaseTable phases(std::vector<std::string> levels, std::vector<std::int64_t> phase, std::vector<double> start,
                 double interval) {
  CaseTable t;
  t.name = "phases";
  t.attrs = {{"interval", interval}};
  TableColumn p = int_column("phase", "the phase", ColumnRange::level);
  p.levels = std::move(levels);
  p.levels_name = "names";
  p.ints = std::move(phase);
  TableColumn s = clock_column("start", "interval start");
  s.reals = std::move(start);
  t.columns = {p, s};
  return t;
}

// A table with columns and no rows.
CaseTable empty(const std::string& name) {
  CaseTable t;
  t.name = name;
  t.columns = {int_column("n", "a count")};
  return t;
}

}  // namespace

TEST_CASE("the ranks' tables merge into one per name: a rank column first, levels merged, attributes the largest",
          "[tables]") {
  const std::vector<std::vector<CaseTable>> per_rank = {
      {phases({"compute", "transfer"}, {1, 0}, {1.0, 2.0}, 0.05), empty("idle")},
      {empty("idle"), phases({"transfer", "reduce"}, {1, 0}, {3.0, 4.0}, 0.1)},
  };
  const auto merged = merge_rank_tables(per_rank);
  REQUIRE(merged.size() == 1);  // "idle" has no rows on any rank: left out
  const CaseTable& t = merged[0];
  CHECK(t.name == "phases");
  CHECK(t.attr("interval") == 0.1);
  CHECK(t.attr("missing", -1.0) == -1.0);
  REQUIRE(t.columns.size() == 3);
  CHECK(t.columns[0].name == "rank");
  CHECK(t.columns[0].range == ColumnRange::rank);
  CHECK(t.columns[0].ints == std::vector<std::int64_t>{0, 0, 1, 1});
  const TableColumn* phase = t.column("phase");
  REQUIRE(phase != nullptr);
  // In the order the rows name them: rank 0's "transfer", "compute", then rank 1's "reduce".
  CHECK(phase->levels == std::vector<std::string>{"transfer", "compute", "reduce"});
  CHECK(phase->ints == std::vector<std::int64_t>{0, 1, 2, 0});
  CHECK(phase->levels_name == "names");
  CHECK(t.column("start")->reals == std::vector<double>{1.0, 2.0, 3.0, 4.0});
  CHECK(t.column("start")->common_clock);
  CHECK(t.rows() == 4);
}

TEST_CASE("ranks whose tables of one name have other columns are a programming error", "[tables][errors]") {
  CaseTable other = phases({"compute"}, {0}, {1.0}, 0.05);
  other.columns.pop_back();
  CHECK_THROWS_AS(merge_rank_tables({{phases({"compute"}, {0}, {1.0}, 0.05)}, {other}}), RuntimeError);
  CHECK_THROWS_WITH(merge_rank_tables({{phases({"compute"}, {0}, {1.0}, 0.05)}, {other}}),
                    "table 'phases' of rank 1 has other columns than rank 0's");
  other = phases({"compute"}, {0}, {1.0}, 0.05);
  other.columns[1].type = ColumnType::integer;
  other.columns[1].ints = {1};
  CHECK_THROWS_WITH(merge_rank_tables({{phases({"compute"}, {0}, {1.0}, 0.05)}, {other}}),
                    "table 'phases' of rank 1 has other columns than rank 0's");
}

TEST_CASE("tables go to bytes and back unchanged: every type, unit, range, clock, levels and attribute", "[tables]") {
  CaseTable t = phases({"compute", "transfer"}, {1, 0}, {1.0, std::nan("")}, 0.05);
  t.description = "named intervals";
  TableColumn host = text_column("host", "where");
  host.texts = {"node0", ""};
  TableColumn clock = real_column("clock", "MHz", "SM clock", ColumnRange::finite);
  clock.unit_si = 1e6;
  clock.reals = {1980, 345};
  t.columns.push_back(host);
  t.columns.push_back(clock);
  const std::vector<CaseTable> tables = {t, empty("idle"), CaseTable{}};
  const auto back = deserialize_tables(serialize_tables(tables));
  REQUIRE(back.size() == tables.size());
  for (std::size_t k = 0; k < tables.size(); ++k) {
    const CaseTable &a = tables[k], &b = back[k];
    CHECK(b.name == a.name);
    CHECK(b.description == a.description);
    CHECK(b.attrs == a.attrs);
    REQUIRE(b.columns.size() == a.columns.size());
    for (std::size_t i = 0; i < a.columns.size(); ++i) {
      const TableColumn &x = a.columns[i], &y = b.columns[i];
      INFO("table " << a.name << ", column " << x.name);
      CHECK(y.name == x.name);
      CHECK(y.type == x.type);
      CHECK(y.unit == x.unit);
      CHECK(y.unit_si == x.unit_si);
      CHECK(y.description == x.description);
      CHECK(y.range == x.range);
      CHECK(y.common_clock == x.common_clock);
      CHECK(y.ints == x.ints);
      CHECK(y.texts == x.texts);
      CHECK(y.levels == x.levels);
      CHECK(y.levels_name == x.levels_name);
      REQUIRE(y.reals.size() == x.reals.size());
      for (std::size_t r = 0; r < x.reals.size(); ++r) {
        CHECK((y.reals[r] == x.reals[r] || (std::isnan(y.reals[r]) && std::isnan(x.reals[r]))));
      }
    }
  }
  const std::string bytes = serialize_tables(tables);
  CHECK_THROWS_WITH(deserialize_tables(bytes.substr(0, bytes.size() - 3)), "tables from another rank end early");
}

TEST_CASE("a column's range has a name in the file, and a name this reader does not know is no range", "[tables]") {
  for (auto r : {ColumnRange::finite, ColumnRange::rank, ColumnRange::sample, ColumnRange::node,
                 ColumnRange::positive, ColumnRange::level}) {
    CHECK(range_named(range_name(r)) == r);
  }
  CHECK(std::string(range_name(ColumnRange::any)).empty());
  CHECK(range_named("a later writer's") == ColumnRange::any);
  CHECK(real_column("t", "s", "a time").unit_si == 1.0);  // a unit is SI unless said otherwise
  CHECK(real_column("x", "", "a ratio").unit_si == 0.0);
}

TEST_CASE("columns_of hands back a table's columns only when each is there and of its type", "[tables]") {
  const CaseTable t = phases({"compute"}, {0}, {1.0}, 0.05);
  const auto cols = columns_of(t, {{"start", ColumnType::real}, {"phase", ColumnType::integer}});
  REQUIRE(cols.size() == 2);
  CHECK(cols[0]->name == "start");
  CHECK(cols[1]->name == "phase");
  CHECK(columns_of(t, {{"start", ColumnType::integer}}).empty());
  CHECK(columns_of(t, {{"end", ColumnType::real}}).empty());
  CHECK(find_table({t}, "phases") != nullptr);
  CHECK(find_table({t}, "pairs") == nullptr);
}
