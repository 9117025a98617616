// docs/results-format.md describes every column of the tables gpuscale writes:
// the runner's (phases, telemetry) and the collective's node-pair schedule,
// taken from the code that builds them, so a column added there and not to
// the doc fails here. docs/config.md has a row for every registered workload
// naming each of its keys.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "io/result_model.hpp"
#include "runner/case_tables.hpp"
#include "workloads/node_pair_table.hpp"
#include "workloads/workload.hpp"

using namespace gpuscale;

namespace {

std::string doc(const std::string& name = "results-format.md") {
  std::ifstream in(std::string(GPUSCALE_SOURCE_DIR) + "/docs/" + name);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The node-pair schedule as the collective makes it, from no rows: its columns alone.
CaseTable empty_pairs() {
  CaseTable rows;
  rows.name = "sweep_ranks";
  rows.columns = {int_column("rank", ""), int_column("member", ""), int_column("node", ""), text_column("host", "")};
  std::vector<CaseTable> tables{rows};
  node_pair_schedule(tables);
  return tables.at(0);
}

}  // namespace

TEST_CASE("the results format doc names every table and column the code writes", "[docs]") {
  const std::string text = doc();
  REQUIRE_FALSE(text.empty());
  // As merge_rank_tables leaves them: a rank column first.
  const std::vector<CaseTable> tables = merge_rank_tables(
      {{phases_table(SampleTimes{{0.0}, {0.0}, {0.0}, {0.0}, {0}, {0}, {0.0}, {0.0}}, {"x"}),
        telemetry_table({TelemetrySample{}}, 0.05)}});
  REQUIRE(tables.size() == 2);
  const CaseTable pairs = empty_pairs();
  REQUIRE(pairs.name == kPairsTable);
  for (const CaseTable* t : {&tables[0], &tables[1], &pairs}) {
    INFO("table " << t->name);
    CHECK(text.find("(`" + t->name + "`") != std::string::npos);
    for (const auto& c : t->columns) {
      INFO("column " << c.name);
      CHECK(text.find("`" + c.name + "`") != std::string::npos);
      if (!c.levels_name.empty()) CHECK(text.find("`" + c.levels_name + "`") != std::string::npos);
    }
  }
}

TEST_CASE("the config doc has a row for every registered workload, naming each of its keys", "[docs]") {
  const std::string text = doc("config.md");
  REQUIRE_FALSE(text.empty());
  for (const WorkloadType* t : workload_registry()) {
    const WorkloadSchema& s = t->schema();
    INFO("workload " << s.name);
    const auto at = text.find("\n| `" + s.name + "` |");
    REQUIRE(at != std::string::npos);
    const std::string row = text.substr(at + 1, text.find('\n', at + 1) - at - 1);
    for (const auto& p : s.params) {
      INFO("key " << p.key);
      CHECK(row.find("`" + p.key + "`") != std::string::npos);
    }
  }
}

#include <set>

#include "io/rank_fields.hpp"

namespace {

// The datasets the doc's table under "## `/ranks`" names: each row's first cell, "`a`, `b`".
std::set<std::string> doc_rank_columns(const std::string& text) {
  const auto from = text.find("## `/ranks`");
  std::istringstream lines(text.substr(from, text.find("\n## ", from + 1) - from));
  std::set<std::string> names;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| `", 0) != 0) continue;
    const std::string cell = line.substr(0, line.find(" |", 2));
    for (std::size_t a = cell.find('`'), b = 0; a != std::string::npos; a = cell.find('`', b + 1)) {
      b = cell.find('`', a + 1);
      if (b == std::string::npos) break;
      names.insert(cell.substr(a + 1, b - a - 1));
    }
  }
  return names;
}

}  // namespace

TEST_CASE("the results format doc lists every /ranks column the code writes, and no other", "[docs]") {
  const std::string text = doc();
  REQUIRE(text.find("## `/ranks`") != std::string::npos);
  std::set<std::string> code;
  for (const RankField& field : kRankFields) code.insert(field.name);
  CHECK(doc_rank_columns(text) == code);
}
