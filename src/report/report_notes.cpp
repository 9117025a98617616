#include "report/report_notes.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

namespace gpuscale {

namespace {

// A number's place in a note's shape, and a time's (a number with its unit, " us").
constexpr char kNumber = '\x01';
constexpr char kTime = '\x02';

// A list of cases longer than this is left out of a grouped note: its count says how many.
constexpr std::size_t kMaxCaseList = 60;

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// A digit after one of these is part of a word or of a number already read ("H100", "sm_90", "0.1.0").
bool in_word(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.'; }

// The seconds in one unit of the time unit at `at` (" us", as format_seconds writes it), and its length; 0 where
// none is there.
double time_unit(const std::string& s, std::size_t at, std::size_t* length) {
  static constexpr std::pair<const char*, double> kUnits[] = {{" ns", 1e-9}, {" us", 1e-6}, {" ms", 1e-3},
                                                               {" s", 1.0}};
  for (const auto& [unit, scale] : kUnits) {
    const std::size_t n = std::strlen(unit);
    if (s.compare(at, n, unit) == 0 && (at + n == s.size() || !in_word(s[at + n]))) {
      *length = n;
      return scale;
    }
  }
  return 0;
}

// The end of the number that starts at `at`: digits, and a point with digits after it.
std::size_t number_end(const std::string& s, std::size_t at) {
  std::size_t end = at;
  while (end < s.size() && is_digit(s[end])) ++end;
  if (end + 1 < s.size() && s[end] == '.' && is_digit(s[end + 1])) {
    ++end;
    while (end < s.size() && is_digit(s[end])) ++end;
  }
  return end;
}

// A note's text with its numbers taken out (`shape`), and the numbers as written, with their values.
ReportNotes::Member member_of(std::size_t case_number, const std::string& text, std::string* shape) {
  ReportNotes::Member m;
  m.case_number = case_number;
  m.text = text;
  for (std::size_t i = 0; i < text.size();) {
    if (!is_digit(text[i]) || (i > 0 && in_word(text[i - 1]))) {
      *shape += text[i++];
      continue;
    }
    std::size_t end = number_end(text, i), unit = 0;
    double value = std::strtod(text.substr(i, end - i).c_str(), nullptr);
    const double scale = time_unit(text, end, &unit);
    *shape += scale > 0 ? kTime : kNumber;
    if (scale > 0) value *= scale;
    end += unit;
    m.numbers.push_back(text.substr(i, end - i));
    m.values.push_back(value);
    i = end;
  }
  return m;
}

// The `k`th number of a group's notes: as written where all agree, else the range from the least to the most,
// "1.26-1.44" ("12-45 us" for times in one unit, "450 us-1.20 ms" in two).
std::string range_of(const std::vector<ReportNotes::Member>& members, std::size_t k) {
  const auto by_value = [k](const auto& a, const auto& b) { return a.values[k] < b.values[k]; };
  const std::string& lo = std::min_element(members.begin(), members.end(), by_value)->numbers[k];
  const std::string& hi = std::max_element(members.begin(), members.end(), by_value)->numbers[k];
  if (lo == hi) return lo;
  const std::size_t lo_space = lo.find(' '), hi_space = hi.find(' ');
  if (lo_space != std::string::npos && hi_space != std::string::npos &&
      lo.substr(lo_space) == hi.substr(hi_space)) {
    return lo.substr(0, lo_space) + "-" + hi;
  }
  return lo + "-" + hi;
}

// What a group's notes say together: the shape with each number, or its range, put back. A range of ranks reads
// "ranks 0-1" (as one number, "rank 0-1" would read as a rank of that name).
std::string group_text(const ReportNotes::Group& g) {
  std::string out;
  std::size_t k = 0;
  for (char c : g.shape) {
    if (c != kNumber && c != kTime) {
      out += c;
      continue;
    }
    const std::string range = range_of(g.members, k);
    const bool varies = range != g.members.front().numbers[k++];
    const std::string word = "rank ";
    if (varies && out.size() >= word.size() &&
        out.compare(out.size() - word.size(), word.size(), word) == 0 &&
        (out.size() == word.size() || !in_word(out[out.size() - word.size() - 1]))) {
      out.insert(out.size() - 1, "s");
    }
    out += range;
  }
  return out;
}

// One case's note as it reads alone: "case 3: cold: ..." or "skipped: case 3: ...".
std::string single(std::size_t case_number, const std::string& kind, const std::string& text, CaseNoteForm form) {
  const std::string c = "case " + std::to_string(case_number);
  const std::string tail = text.empty() ? "" : ": " + text;
  return form == CaseNoteForm::case_first ? c + ": " + kind + tail : kind + ": " + c + tail;
}

// Groups of several experiments that read the same: one line for all of them.
struct Merged {
  std::size_t first = 0;
  const ReportNotes::Group* group = nullptr;  // the first; kind and form are those of all
  std::string text;
  std::vector<std::string> experiments;
  std::vector<std::size_t> cases;
};

bool shares_a_case(const Merged& m, const ReportNotes::Group& g) {
  return std::any_of(g.members.begin(), g.members.end(), [&m](const ReportNotes::Member& x) {
    return std::find(m.cases.begin(), m.cases.end(), x.case_number) != m.cases.end();
  });
}

std::vector<Merged> merged(const std::vector<ReportNotes::Group>& groups) {
  std::vector<Merged> out;
  for (const auto& g : groups) {
    const std::string text = g.members.size() == 1 ? g.members[0].text : group_text(g);
    auto it = std::find_if(out.begin(), out.end(), [&](const Merged& m) {
      return m.group->kind == g.kind && m.group->form == g.form && m.text == text && !shares_a_case(m, g);
    });
    if (it == out.end()) it = out.insert(out.end(), Merged{g.first, &g, text, {}, {}});
    it->first = std::min(it->first, g.first);
    if (std::find(it->experiments.begin(), it->experiments.end(), g.experiment) == it->experiments.end()) {
      it->experiments.push_back(g.experiment);
    }
    for (const auto& m : g.members) it->cases.push_back(m.case_number);
  }
  return out;
}

}  // namespace

std::string case_list(std::vector<std::size_t> cases) {
  std::sort(cases.begin(), cases.end());
  cases.erase(std::unique(cases.begin(), cases.end()), cases.end());
  std::string out;
  for (std::size_t i = 0; i < cases.size();) {
    std::size_t j = i;
    while (j + 1 < cases.size() && cases[j + 1] == cases[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    if (j - i >= 2) {
      out += std::to_string(cases[i]) + "-" + std::to_string(cases[j]);
      i = j + 1;
    } else {
      out += std::to_string(cases[i++]);
    }
  }
  return out;
}

ReportNotes::ReportNotes(std::vector<std::pair<std::string, std::size_t>> experiments, bool grouped)
    : experiments_(std::move(experiments)), grouped_(grouped) {}

void ReportNotes::add(const std::string& note) {
  const std::size_t at = added_++;
  if (note.empty()) return;
  const auto same = [&note](const auto& p) { return p.second == note; };
  if (std::none_of(plain_.begin(), plain_.end(), same)) plain_.emplace_back(at, note);
}

void ReportNotes::add_case(const std::string& experiment, std::size_t case_number, const std::string& kind,
                           const std::string& text, CaseNoteForm form) {
  if (!grouped_) {
    add(single(case_number, kind, text, form));
    return;
  }
  std::string shape;
  Member m = member_of(case_number, text, &shape);
  // The first group of the same experiment, kind and shape that has no note of this case yet (a case with two
  // stragglers has two notes of one shape).
  auto it = std::find_if(groups_.begin(), groups_.end(), [&](const Group& g) {
    return g.experiment == experiment && g.kind == kind && g.form == form && g.shape == shape &&
           std::none_of(g.members.begin(), g.members.end(),
                        [case_number](const Member& x) { return x.case_number == case_number; });
  });
  if (it == groups_.end()) it = groups_.insert(groups_.end(), Group{added_, experiment, kind, shape, form, {}});
  ++added_;
  it->members.push_back(std::move(m));
}

void ReportNotes::add_flag(const std::string& experiment, std::size_t case_number, const std::string& flag) {
  const std::size_t colon = flag.find(": ");
  if (colon == std::string::npos) {
    add_case(experiment, case_number, flag, "", CaseNoteForm::case_first);
  } else {
    add_case(experiment, case_number, flag.substr(0, colon), flag.substr(colon + 2), CaseNoteForm::case_first);
  }
}

std::vector<std::string> ReportNotes::lines() const {
  std::vector<std::pair<std::size_t, std::string>> out = plain_;
  for (const Merged& m : merged(groups_)) {
    const Group& g = *m.group;
    if (m.cases.size() == 1) {
      out.emplace_back(m.first, single(m.cases[0], g.kind, m.text, g.form));
      continue;
    }
    std::size_t of = 0;  // the cases of the experiments the line speaks of
    for (const auto& [name, cases] : experiments_) {
      if (std::find(m.experiments.begin(), m.experiments.end(), name) != m.experiments.end()) of += cases;
    }
    std::string head = g.kind + " in " + std::to_string(m.cases.size()) + " of " +
                       std::to_string(std::max(of, m.cases.size())) + " cases";
    if (m.experiments.size() == 1 && experiments_.size() > 1) head += " of " + m.experiments[0];
    const std::string list = case_list(m.cases);
    if (list.size() <= kMaxCaseList) head += " (" + list + ")";
    out.emplace_back(m.first, head + (m.text.empty() ? "" : ": " + m.text));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> lines;
  for (auto& [at, text] : out) lines.push_back(std::move(text));
  return lines;
}

}  // namespace gpuscale
