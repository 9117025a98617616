#include "app/cli_options.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
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
  return number_validator(
      "SECONDS", [](double v) { return v >= 0 && v <= kMaxDurationS; },
      "a number of seconds from 0 to 2592000 (30 days)");
}

// "--name: 1 required TYPE missing": the option's name, else "".
std::string option_missing_a_value(const std::string& message) {
  const std::size_t colon = message.find(": 1 required ");
  const bool missing = colon != std::string::npos && message.find(" missing", colon) != std::string::npos;
  return missing && message.rfind("-", 0) == 0 ? message.substr(0, colon) : "";
}

// "The following argument(s) was/were not expected: 2 --name": those that look like options ("--name").
std::vector<std::string> unexpected_options(const std::string& message) {
  std::vector<std::string> options;
  for (const std::string head : {"The following argument was not expected: ",
                                 "The following arguments were not expected: "}) {
    if (message.rfind(head, 0) != 0) continue;
    std::size_t from = head.size();
    while (from < message.size()) {
      const std::size_t to = std::min(message.find(' ', from), message.size());
      if (message.compare(from, 2, "--") == 0) options.push_back(message.substr(from, to - from));
      from = to + 1;
    }
  }
  return options;
}

}  // namespace

CLI::Validator number_validator(const std::string& name, std::function<bool(double)> ok, const std::string& must) {
  return CLI::Validator(
      [ok, must](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0' || !ok(v)) return "must be " + must + ", got " + text;
        return "";
      },
      name);
}

CLI::Validator whole_number_validator(const std::string& of_what) {
  return CLI::Validator(
      [of_what](std::string& text) -> std::string {
        char* end = nullptr;
        errno = 0;
        const long long v = std::strtoll(text.c_str(), &end, 10);
        if (end == text.c_str() || *end != '\0' || errno == ERANGE || v < 1 || v > kMaxCount) {
          return "must be a whole number of " + of_what + " from 1 to 2147483647, got " + text;
        }
        return "";
      },
      "POSITIVE");
}

CLI::Validator choice_validator(const std::vector<std::string>& choices) {
  return CLI::Validator(
      [choices](std::string& text) -> std::string {
        if (std::find(choices.begin(), choices.end(), text) != choices.end()) return "";
        return "must be one of " + join(choices, ", ") + ", got " + text + did_you_mean(text, choices);
      },
      join(choices, "|"));
}

std::string parse_error_text(const CLI::App& cmd, const CLI::ParseError& e, const std::string& command) {
  std::string message = e.what();
  if (const std::string name = option_missing_a_value(message); !name.empty()) {
    if (const CLI::Option* o = cmd.get_option_no_throw(name)) {
      message = name + " needs a value: " + o->get_description();
    }
  } else if (const auto unknown = unexpected_options(message); unknown.size() == 1) {
    std::vector<std::string> names;
    for (const CLI::Option* o : cmd.get_options()) {
      if (!o->get_lnames().empty()) names.push_back("--" + o->get_lnames().front());
    }
    message = unknown[0] + " is not an option of '" + command + "'" + did_you_mean(unknown[0], names);
  } else if (unknown.size() > 1) {
    message = join(unknown, ", ") + " are not options of '" + command + "'";
  }
  return message + "; see '" + command + " --help'";
}

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
                     "): more is most often a list typo")
      ->check(whole_number_validator("cases"));
  cmd.add_option("--time-budget", time_budget_s,
                 "Refuse a plan estimated to take longer than this many seconds (before anything runs; 'check' "
                 "prints the estimate); overrides budget_s in [defaults]; 0: none, but a plan estimated over 24 h "
                 "is refused all the same (most often a typo); at most 2592000 (30 days)")
      ->check(budget_seconds());
}

}  // namespace gpuscale
