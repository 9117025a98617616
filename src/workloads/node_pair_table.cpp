#include "workloads/node_pair_table.hpp"

#include <algorithm>

#include "workloads/collective_pattern.hpp"

namespace gpuscale {

namespace {
constexpr const char* kRankRows = "sweep_ranks";  // gathered, then replaced: never in the file
}  // namespace

std::vector<CaseTable> node_pair_rank_rows(const CaseContext& ctx) {
  if (!ctx.group || !ctx.group->member()) return {};
  CaseTable t;
  t.name = kRankRows;
  t.columns = {int_column("member", "rank in the sweep"), int_column("node", "node index"),
               text_column("host", "hostname")};
  t.columns[0].ints = {ctx.group->rank};
  t.columns[1].ints = {ctx.node_index};
  t.columns[2].texts = {ctx.hostname};
  return {t};
}

namespace {

CaseTable empty_schedule() {
  CaseTable t;
  t.name = kPairsTable;
  t.description = "the node-pair sweep: which two nodes exchanged in which round; phase \"round k\" timed it";
  t.columns = {int_column("round", "the round the pair exchanged in, 1..rounds", ColumnRange::positive),
               int_column("node_a", "node index of one end (the lower)", ColumnRange::node),
               int_column("node_b", "node index of the other end", ColumnRange::node),
               int_column("rank_a", "the world rank that ran node_a's end (its local rank 0)", ColumnRange::rank),
               int_column("rank_b", "the world rank that ran node_b's end", ColumnRange::rank),
               text_column("host_a", "hostname of node_a"),
               text_column("host_b", "hostname of node_b")};
  return t;
}

}  // namespace

void node_pair_schedule(std::vector<CaseTable>& tables) {
  const auto rows = std::find_if(tables.begin(), tables.end(), [](const CaseTable& t) { return t.name == kRankRows; });
  if (rows == tables.end()) return;
  const auto cols = columns_of(*rows, {{"rank", ColumnType::integer}, {"member", ColumnType::integer},
                                       {"node", ColumnType::integer}, {"host", ColumnType::text}});
  const int n = static_cast<int>(rows->rows());
  std::vector<std::size_t> of(static_cast<std::size_t>(n));  // member -> row
  for (std::size_t i = 0; i < rows->rows(); ++i) of.at(static_cast<std::size_t>(cols[1]->ints[i])) = i;
  CaseTable t = empty_schedule();
  for (int round = 0; round < node_pair_rounds(n); ++round) {
    for (int a = 0; a < n; ++a) {
      const int b = node_pair_partner(a, round, n);
      if (b <= a) continue;  // each pair once; -1: a rests
      const std::size_t ra = of[a], rb = of[b];
      t.columns[0].ints.push_back(round + 1);
      t.columns[1].ints.push_back(cols[2]->ints[ra]);
      t.columns[2].ints.push_back(cols[2]->ints[rb]);
      t.columns[3].ints.push_back(cols[0]->ints[ra]);
      t.columns[4].ints.push_back(cols[0]->ints[rb]);
      t.columns[5].texts.push_back(cols[3]->texts[ra]);
      t.columns[6].texts.push_back(cols[3]->texts[rb]);
    }
  }
  *rows = std::move(t);
}

}  // namespace gpuscale
