// gpuscale report FILE --verdict: one verdict per node, GPU and link (report/verdict.hpp), in the format asked.
#include <iostream>
#include <string>
#include <vector>

#include "app/commands.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "report/verdict.hpp"

namespace gpuscale {

void check_verdict_options(const ReportOptions& opt) {
  const bool view = opt.format == "slurm" || opt.format == "hosts";
  if (!opt.verdict) {
    if (view) {
      throw InputError("--format " + opt.format + " lists the nodes a verdict fails: add --verdict (e.g. 'gpuscale "
                       "report FILE --verdict --format " + opt.format + "')");
    }
    return;
  }
  if (opt.format != "table" && opt.format != "json" && !view) {
    throw InputError("--verdict prints as table, json, slurm or hosts, not " + opt.format);
  }
  if (opt.files.size() != 1) {
    throw InputError("--verdict judges one result file, not " + std::to_string(opt.files.size()) +
                     ": run it once per file");
  }
  const char* other = opt.check                ? "--check"
                      : !opt.baseline.empty()  ? "--baseline"
                      : opt.breakdown          ? "--breakdown"
                      : opt.wide               ? "--wide"
                      : !opt.output.empty()    ? "-o"
                      : !opt.cases.empty()     ? "--cases"
                                               : nullptr;
  if (other) {
    throw InputError(std::string("--verdict and ") + other + " cannot be combined: the verdict is a view of its "
                     "own (one per node, GPU and link); run them one at a time");
  }
}

int report_verdict(const ReportOptions& opt, const RunRecord& run, const std::vector<ReportRow>& rows) {
  const Verdict v = judge_run(opt.files.front(), run, rows);
  if (opt.format == "json") {
    std::cout << render_verdict_json(v) << std::flush;
  } else if (!v.possible) {
    if (opt.format == "table") std::cout << printable(render_verdict_table(v), "\n") << std::flush;
    if (opt.format == "slurm") std::cout << printable(render_verdict_slurm(v), "\n") << std::flush;
    if (opt.format == "hosts") std::cout << printable(render_verdict_hosts(v), "\n") << std::flush;
    std::cerr << "gpuscale: " << printable("no verdict: " + v.file + ": " + v.why_not) << std::endl;
  } else if (opt.format == "slurm") {
    std::cout << printable(render_verdict_slurm(v), "\n") << std::flush;
  } else if (opt.format == "hosts") {
    std::cout << printable(render_verdict_hosts(v), "\n") << std::flush;
  } else {
    std::cout << printable(render_verdict_table(v), "\n") << std::flush;
  }
  return verdict_exit_code(v);
}

}  // namespace gpuscale
