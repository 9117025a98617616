// A table a case carries beside its samples: rows of named, typed columns
// (the GPU's readings, phase intervals, the node-pair schedule, whatever a
// workload records). The file keeps each as a group of the case, one dataset
// per column, with the column's unit, description and range as attributes:
// a reader reads any table back without knowing it (docs/results-format.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gpuscale {

enum class ColumnType { integer, real, text };

// What the reader checks of each value of a column (the dataset's attribute "range").
enum class ColumnRange {
  any,
  finite,    // a real that is neither NaN nor infinite
  rank,      // a world rank of the case: 0..ranks-1
  sample,    // a timed sample of the case: 0..reps-1
  node,      // a node index of the run: 0..ranks of the run - 1
  positive,  // an integer of at least 1
  level,     // an index into the column's levels
};

// The range's name in the file ("finite", "rank", ...; "" for any), and the range of a name (any for one this
// reader does not know: a later writer's, left unchecked).
const char* range_name(ColumnRange range);
ColumnRange range_named(const std::string& name);

struct TableColumn {
  std::string name;
  ColumnType type = ColumnType::real;
  std::string unit;  // "" for none
  double unit_si = 0;  // the factor to the SI unit (1e6 for MHz); 0: none written (real_column: 1 with a unit)
  std::string description;
  ColumnRange range = ColumnRange::any;
  // Times on the run's common clock: moved with their row's rank when the run
  // ends on a better clock estimate (the table then has a rank column).
  bool common_clock = false;
  std::vector<std::int64_t> ints;   // ColumnType::integer
  std::vector<double> reals;        // ColumnType::real
  std::vector<std::string> texts;   // ColumnType::text
  // ColumnRange::level: what each index names, kept as the dataset `levels_name` beside the column.
  std::vector<std::string> levels;
  std::string levels_name;

  std::size_t size() const;
  // Whether the range can be checked on values of this type: numbers for finite, integers for the others.
  bool range_fits_type() const;
  // A level column's levels as a file may hold them for `rows` rows: distinct, and no more than max(rows, 1).
  bool levels_fit(std::size_t rows) const;
  // The value of row `i` as the file would show it (for messages and tests).
  std::string cell(std::size_t i) const;
};

// A column of its type, described, with no values yet.
TableColumn int_column(std::string name, std::string description, ColumnRange range = ColumnRange::any);
TableColumn real_column(std::string name, std::string unit, std::string description,
                        ColumnRange range = ColumnRange::any);
TableColumn text_column(std::string name, std::string description);
// Reals on the common clock (seconds, finite), moved with a better clock estimate.
TableColumn clock_column(std::string name, std::string description);

struct CaseTable {
  std::string name;  // the group's name in the case: a word, unique in the case
  std::string description;
  // Numbers about the whole table (telemetry's reading interval); when ranks'
  // tables are gathered into one, each is the largest of the ranks'.
  std::vector<std::pair<std::string, double>> attrs;
  std::vector<TableColumn> columns;

  std::size_t rows() const { return columns.empty() ? 0 : columns.front().size(); }
  const TableColumn* column(const std::string& n) const;
  TableColumn* column(const std::string& n);
  // The attribute's value; `otherwise` when the table has none.
  double attr(const std::string& n, double otherwise = 0.0) const;
};

// The table of that name; null when there is none.
const CaseTable* find_table(const std::vector<CaseTable>& tables, const std::string& name);

// Columns of `table`, all present and of their types, in the order asked; empty when one is missing or of
// another type (a file from another writer): the caller then leaves the table alone.
struct ColumnAsk {
  const char* name;
  ColumnType type;
};
std::vector<const TableColumn*> columns_of(const CaseTable& table, const std::vector<ColumnAsk>& ask);

// Each rank's tables merged into one per name (rank 0's first; tables in the
// order they first appear): rows in rank order, a leading integer column
// "rank" saying whose row it is, levels merged in the order they appear and
// indices mapped onto them, attributes the largest of the ranks'. A table
// without rows is left out. Throws RuntimeError when two ranks' tables of a
// name differ in their columns.
std::vector<CaseTable> merge_rank_tables(const std::vector<std::vector<CaseTable>>& per_rank);

// Tables as bytes and back, for sending them between ranks.
std::string serialize_tables(const std::vector<CaseTable>& tables);
std::vector<CaseTable> deserialize_tables(const std::string& bytes);

}  // namespace gpuscale
