#include "app/cli_options.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>

#include "core/param_spec.hpp"
#include "core/plan.hpp"
#include "core/text.hpp"
#include "workloads/workload.hpp"

namespace gpuscale {

namespace {

// --time-budget: seconds from 0 to kMaxDurationS, as budget_s in a config.
CLI::Validator budget_seconds() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0' || !(v >= 0 && v <= kMaxDurationS)) {
          return "must be a number of seconds from 0 to 2592000 (30 days), got " + text;
        }
        return "";
      },
      "SECONDS");
}

}  // namespace

// Messages quote the user's input (keys, names, paths): control characters escaped, nothing raw on the terminal.
void print_error(const std::string& message) {
  std::fprintf(stderr, "gpuscale: error: %s\n", printable(message, "\n").c_str());
}

std::string workloads_help() {
  std::string s = "Workloads:\n";
  for (const WorkloadType* t : workload_registry()) {
    const WorkloadSchema& w = t->schema();
    s += "  " + w.name + ": " + w.description + "\n    keys:";
    for (const auto& p : w.params) s += " " + p.key;
    s += "\n";
  }
  return s + "Each key's default, choices and largest value: docs/config.md.\n";
}

void add_plan_limits(CLI::App& cmd, std::size_t& max_cases, double& time_budget_s) {
  cmd.add_option("--max-cases", max_cases,
                 "Refuse a plan of more cases than this (default " + std::to_string(kDefaultMaxCases) +
                     "): more is most often a list typo");
  cmd.add_option("--time-budget", time_budget_s,
                 "Refuse a plan estimated to take longer than this many seconds (before anything runs; 'check' "
                 "prints the estimate); overrides budget_s in [defaults]; 0: none, but a plan estimated over 24 h "
                 "is refused all the same (most often a typo); at most 2592000 (30 days)")
      ->check(budget_seconds());
}

}  // namespace gpuscale
