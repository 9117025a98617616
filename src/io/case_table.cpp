#include "io/case_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "core/error.hpp"
#include "core/text.hpp"

namespace gpuscale {

std::size_t TableColumn::size() const {
  switch (type) {
    case ColumnType::integer: return ints.size();
    case ColumnType::real: return reals.size();
    case ColumnType::text: return texts.size();
  }
  return 0;
}

bool TableColumn::range_fits_type() const {
  if (range == ColumnRange::any) return true;
  if (range == ColumnRange::finite) return type != ColumnType::text;
  return type == ColumnType::integer;
}

bool TableColumn::levels_fit(std::size_t rows) const {
  return std::set<std::string>(levels.begin(), levels.end()).size() == levels.size() &&
         levels.size() <= std::max<std::size_t>(rows, 1);
}

std::string TableColumn::cell(std::size_t i) const {
  switch (type) {
    case ColumnType::integer: return std::to_string(ints.at(i));
    case ColumnType::real: return format_number("%.17g", reals.at(i));
    case ColumnType::text: return texts.at(i);
  }
  return "";
}

namespace {
constexpr std::pair<ColumnRange, const char*> kRangeNames[] = {
    {ColumnRange::finite, "finite"}, {ColumnRange::rank, "rank"},         {ColumnRange::sample, "sample"},
    {ColumnRange::node, "node"},     {ColumnRange::positive, "positive"}, {ColumnRange::level, "level"},
};
}  // namespace

const char* range_name(ColumnRange range) {
  for (const auto& [r, name] : kRangeNames) {
    if (r == range) return name;
  }
  return "";
}

ColumnRange range_named(const std::string& name) {
  for (const auto& [r, n] : kRangeNames) {
    if (n == name) return r;
  }
  return ColumnRange::any;
}

TableColumn int_column(std::string name, std::string description, ColumnRange range) {
  TableColumn c;
  c.name = std::move(name);
  c.type = ColumnType::integer;
  c.description = std::move(description);
  c.range = range;
  return c;
}

TableColumn real_column(std::string name, std::string unit, std::string description, ColumnRange range) {
  TableColumn c;
  c.name = std::move(name);
  c.type = ColumnType::real;
  c.unit = std::move(unit);
  c.unit_si = c.unit.empty() ? 0.0 : 1.0;  // an SI unit unless the caller says otherwise (MHz: 1e6)
  c.description = std::move(description);
  c.range = range;
  return c;
}

TableColumn text_column(std::string name, std::string description) {
  TableColumn c;
  c.name = std::move(name);
  c.type = ColumnType::text;
  c.description = std::move(description);
  return c;
}

TableColumn clock_column(std::string name, std::string description) {
  TableColumn c = real_column(std::move(name), "s", std::move(description), ColumnRange::finite);
  c.common_clock = true;
  return c;
}

const TableColumn* CaseTable::column(const std::string& n) const {
  for (const auto& c : columns) {
    if (c.name == n) return &c;
  }
  return nullptr;
}

TableColumn* CaseTable::column(const std::string& n) {
  return const_cast<TableColumn*>(static_cast<const CaseTable*>(this)->column(n));
}

double CaseTable::attr(const std::string& n, double otherwise) const {
  for (const auto& [k, v] : attrs) {
    if (k == n) return v;
  }
  return otherwise;
}

const CaseTable* find_table(const std::vector<CaseTable>& tables, const std::string& name) {
  for (const auto& t : tables) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::vector<const TableColumn*> columns_of(const CaseTable& table, const std::vector<ColumnAsk>& ask) {
  std::vector<const TableColumn*> out;
  for (const auto& a : ask) {
    const TableColumn* c = table.column(a.name);
    if (!c || c->type != a.type) return {};
    out.push_back(c);
  }
  return out;
}

namespace {

// `from`'s rows appended to `to`, level indices mapped onto `to`'s levels.
void append_rows(TableColumn& to, const TableColumn& from) {
  switch (from.type) {
    case ColumnType::integer:
      if (from.range != ColumnRange::level) {
        to.ints.insert(to.ints.end(), from.ints.begin(), from.ints.end());
        break;
      }
      for (auto i : from.ints) {
        const std::string& level = from.levels.at(static_cast<std::size_t>(i));
        auto it = std::find(to.levels.begin(), to.levels.end(), level);
        if (it == to.levels.end()) it = to.levels.insert(to.levels.end(), level);
        to.ints.push_back(it - to.levels.begin());
      }
      break;
    case ColumnType::real: to.reals.insert(to.reals.end(), from.reals.begin(), from.reals.end()); break;
    case ColumnType::text: to.texts.insert(to.texts.end(), from.texts.begin(), from.texts.end()); break;
  }
}

bool same_columns(const CaseTable& merged, const CaseTable& t) {
  if (merged.columns.size() != t.columns.size() + 1) return false;
  for (std::size_t i = 0; i < t.columns.size(); ++i) {
    const TableColumn &a = merged.columns[i + 1], &b = t.columns[i];
    if (a.name != b.name || a.type != b.type || a.range != b.range) return false;
  }
  return true;
}

// An empty table of t's name, attributes and columns, led by the rank column.
CaseTable empty_like(const CaseTable& t) {
  CaseTable m;
  m.name = t.name;
  m.description = t.description;
  m.attrs = t.attrs;
  m.columns.push_back(int_column("rank", "the world rank whose row it is", ColumnRange::rank));
  for (const auto& c : t.columns) {
    TableColumn e = c;
    e.ints.clear();
    e.reals.clear();
    e.texts.clear();
    e.levels.clear();
    m.columns.push_back(std::move(e));
  }
  return m;
}

}  // namespace

std::vector<CaseTable> merge_rank_tables(const std::vector<std::vector<CaseTable>>& per_rank) {
  std::vector<CaseTable> out;
  for (std::size_t r = 0; r < per_rank.size(); ++r) {
    for (const auto& t : per_rank[r]) {
      auto it = std::find_if(out.begin(), out.end(), [&](const CaseTable& m) { return m.name == t.name; });
      if (it == out.end()) it = out.insert(out.end(), empty_like(t));
      if (!same_columns(*it, t)) {
        throw RuntimeError("table '" + t.name + "' of rank " + std::to_string(r) + " has other columns than rank 0's");
      }
      for (const auto& [k, v] : t.attrs) {
        auto a = std::find_if(it->attrs.begin(), it->attrs.end(), [&](const auto& x) { return x.first == k; });
        if (a == it->attrs.end()) it->attrs.emplace_back(k, v);
        else a->second = std::max(a->second, v);
      }
      it->columns[0].ints.insert(it->columns[0].ints.end(), t.rows(), static_cast<std::int64_t>(r));
      for (std::size_t i = 0; i < t.columns.size(); ++i) append_rows(it->columns[i + 1], t.columns[i]);
    }
  }
  out.erase(std::remove_if(out.begin(), out.end(), [](const CaseTable& t) { return t.rows() == 0; }), out.end());
  return out;
}

namespace {

// Bytes out: fixed-size numbers as they are in memory (ranks of one job share a layout), strings with their length.
struct Out {
  std::string bytes;
  template <class T>
  void num(T v) {
    bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void str(const std::string& s) {
    num<std::uint64_t>(s.size());
    bytes += s;
  }
  void strs(const std::vector<std::string>& v) {
    num<std::uint64_t>(v.size());
    for (const auto& s : v) str(s);
  }
};

struct In {
  const std::string& bytes;
  std::size_t at = 0;
  template <class T>
  T num() {
    T v{};
    if (at + sizeof v > bytes.size()) throw RuntimeError("tables from another rank end early");
    std::memcpy(&v, bytes.data() + at, sizeof v);
    at += sizeof v;
    return v;
  }
  std::string str() {
    const auto n = num<std::uint64_t>();
    if (n > bytes.size() - at) throw RuntimeError("tables from another rank end early");
    std::string s = bytes.substr(at, n);
    at += n;
    return s;
  }
  std::vector<std::string> strs() {
    std::vector<std::string> v(num<std::uint64_t>());
    for (auto& s : v) s = str();
    return v;
  }
};

void write_column(Out& o, const TableColumn& c) {
  o.str(c.name);
  o.num<int>(static_cast<int>(c.type));
  o.str(c.unit);
  o.num<double>(c.unit_si);
  o.str(c.description);
  o.num<int>(static_cast<int>(c.range));
  o.num<bool>(c.common_clock);
  o.num<std::uint64_t>(c.size());
  for (auto v : c.ints) o.num(v);
  for (auto v : c.reals) o.num(v);
  for (const auto& s : c.texts) o.str(s);
  o.strs(c.levels);
  o.str(c.levels_name);
}

TableColumn read_column(In& in) {
  TableColumn c;
  c.name = in.str();
  c.type = static_cast<ColumnType>(in.num<int>());
  c.unit = in.str();
  c.unit_si = in.num<double>();
  c.description = in.str();
  c.range = static_cast<ColumnRange>(in.num<int>());
  c.common_clock = in.num<bool>();
  const auto n = in.num<std::uint64_t>();
  for (std::uint64_t i = 0; i < n; ++i) {
    if (c.type == ColumnType::integer) c.ints.push_back(in.num<std::int64_t>());
    if (c.type == ColumnType::real) c.reals.push_back(in.num<double>());
    if (c.type == ColumnType::text) c.texts.push_back(in.str());
  }
  c.levels = in.strs();
  c.levels_name = in.str();
  return c;
}

}  // namespace

std::string serialize_tables(const std::vector<CaseTable>& tables) {
  Out o;
  o.num<std::uint64_t>(tables.size());
  for (const auto& t : tables) {
    o.str(t.name);
    o.str(t.description);
    o.num<std::uint64_t>(t.attrs.size());
    for (const auto& [k, v] : t.attrs) {
      o.str(k);
      o.num(v);
    }
    o.num<std::uint64_t>(t.columns.size());
    for (const auto& c : t.columns) write_column(o, c);
  }
  return std::move(o.bytes);
}

std::vector<CaseTable> deserialize_tables(const std::string& bytes) {
  In in{bytes};
  std::vector<CaseTable> out(in.num<std::uint64_t>());
  for (auto& t : out) {
    t.name = in.str();
    t.description = in.str();
    t.attrs.resize(in.num<std::uint64_t>());
    for (auto& [k, v] : t.attrs) {
      k = in.str();
      v = in.num<double>();
    }
    t.columns.resize(in.num<std::uint64_t>());
    for (auto& c : t.columns) c = read_column(in);
  }
  return out;
}

}  // namespace gpuscale
