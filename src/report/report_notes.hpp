// The notes under the report's table: a note that many cases share (ran cold, skipped for the same reason, host
// busy) reads once per experiment, with how many cases it concerns, which, and the range of its numbers; notes that
// say different things stay apart. JSON and CSV keep each row's own flags. Definitions: docs/analysis.md.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace gpuscale {

// How a note about one case reads alone: "case 3: cold: ..." (a flag) or "skipped: case 3: ..." (a status).
enum class CaseNoteForm { case_first, kind_first };

// Case numbers as a short list, runs of three or more as ranges: {3, 4, 5, 6, 9, 12, 13} -> "3-6, 9, 12, 13".
std::string case_list(std::vector<std::size_t> cases);

// The notes of a report, in the order they were first added. Grouped, a note that several cases of an experiment
// share, but for its numbers, is one line: "cold in 8 of 24 cases (3-9, 12): the first timed sample took
// 1.26-1.44x ..." (each number that differs as the range of its values, the cases named where the list is short);
// a group whose line is the same in several experiments is one line for all of them. Not grouped (report --wide),
// each case's note is a line of its own, as one case's note reads grouped.
class ReportNotes {
 public:
  // `experiments`: each experiment's name and number of cases, in the report's order.
  ReportNotes(std::vector<std::pair<std::string, std::size_t>> experiments, bool grouped);

  // A note said once, as it is (the same text added again is not repeated).
  void add(const std::string& note);
  // A note of one case: its `kind` ("cold", "skipped") and what it says of that case.
  void add_case(const std::string& experiment, std::size_t case_number, const std::string& kind,
                const std::string& text, CaseNoteForm form);
  // A flag of one case, "kind: text" ("cold: the first timed sample ..."), read as "case N: " before it.
  void add_flag(const std::string& experiment, std::size_t case_number, const std::string& flag);

  // The lines, without "note: ".
  std::vector<std::string> lines() const;

  // A note of one case in a group, and a group: notes of one experiment and kind that read the same but for their
  // numbers (what report_notes.cpp's helpers read).
  struct Member {
    std::size_t case_number = 0;
    std::string text;  // as the case's own note says it
    std::vector<std::string> numbers;  // its numbers as written ("1.25", "45.6 us")
    std::vector<double> values;        // and their values (seconds for times)
  };
  struct Group {
    std::size_t first = 0;  // the position of its first note among all notes added
    std::string experiment, kind, shape;  // shape: the text with its numbers taken out
    CaseNoteForm form = CaseNoteForm::case_first;
    std::vector<Member> members;
  };

 private:
  std::vector<std::pair<std::string, std::size_t>> experiments_;
  bool grouped_;
  std::size_t added_ = 0;                                 // notes added so far
  std::vector<std::pair<std::size_t, std::string>> plain_;  // position, text
  std::vector<Group> groups_;
};

}  // namespace gpuscale
