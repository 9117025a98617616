// report --verdict: every judgment a result file supports -- failed limits, stragglers, slow node pairs, throttled
// GPUs, wrong results, a busy host, skipped cases -- folded onto the node, GPU (rank) or link it points at, each
// PASS, WARN or FAIL with its reasons, and the run's overall severity (docs/analysis.md).
#pragma once

#include <string>
#include <vector>

#include "io/result_model.hpp"
#include "report/finding.hpp"
#include "report/report.hpp"

namespace gpuscale {

// A rank straggling in at least this share of the cases it took part in (and in 2 or more) fails; in fewer, warns.
constexpr double kStragglerFailShare = 0.5;

struct SubjectVerdict {
  std::string name;  // node: hostname; gpu: "rank 5 (node3, GPU 1)"; link: "node1-node3"
  std::string host;  // node and gpu: the node's hostname ("" for a link)
  int rank = -1, gpu = -1;  // gpu: the rank and the GPU's index among those it sees (-1: not known)
  std::string host_a, host_b;  // link
  Severity severity = Severity::pass;
  std::vector<std::string> reasons;
};

struct Verdict {
  std::string file;
  bool possible = true;  // false: the file cannot support one (why_not says why; exit 2)
  std::string why_not;
  Severity overall = Severity::pass;
  std::vector<std::string> reasons;  // the run's own (failed limits of cases on several nodes, oversubscribed)
  std::vector<std::string> notes;    // what was not judged (skipped cases), which does not change the severity
  std::vector<SubjectVerdict> nodes, gpus, links;
  int cases_ran = 0;
};

// The verdict of one file from its run and its rows (report_row, relate_rows).
Verdict judge_run(const std::string& path, const RunRecord& run, const std::vector<ReportRow>& rows);

const char* severity_name(Severity s);  // "PASS", "WARN", "FAIL"
// 0 pass or warn, 1 fail, 2 no verdict possible (the exit codes of report --verdict).
int verdict_exit_code(const Verdict& v);

// The views: a table (failed and warned parts with their reasons, the passing ones in a line per kind); JSON
// ({"file", "overall": {"severity", "reasons"}, "notes", "nodes", "gpus", "links"}); the nodes to take out as Slurm
// takes them (a hostlist, then an scontrol line per node for an operator to run); one hostname a line.
std::string render_verdict_table(const Verdict& v);
std::string render_verdict_json(const Verdict& v);
std::string render_verdict_slurm(const Verdict& v);
std::string render_verdict_hosts(const Verdict& v);
// The parts that fail, for a section of report --check: "parts that fail: node node3, rank 5 (n2, GPU 1) (see
// --verdict)"; "" where none does or no verdict is possible. (Warnings, which a busy host gives, stay in
// --verdict: the check's output is the same on a quiet and a busy host where the limits are.)
std::string verdict_line(const Verdict& v);

// The nodes to take out: those that fail, and those holding a GPU that fails; in the order of the run's nodes.
std::vector<std::string> nodes_to_drain(const Verdict& v);
// Hostnames as Slurm's hostlist writes them: "login,node[3,7-9],gpu[01-10]" (names without a number first, then
// one group per prefix in order of appearance, its numbers sorted, runs of them as ranges, zero padding kept).
std::string slurm_hostlist(const std::vector<std::string>& hosts);

}  // namespace gpuscale
