// Command-line pieces that several subcommands share, so that they read the same in every --help.
#pragma once

#include <cstddef>
#include <string>

namespace CLI {
class App;
}

namespace gpuscale {

// The end of the help of a command that reads a config: each workload, its description and its keys.
std::string workloads_help();

// --max-cases and --time-budget, the limits a plan is checked against before anything runs ('run' and 'check').
void add_plan_limits(CLI::App& cmd, std::size_t& max_cases, double& time_budget_s);

}  // namespace gpuscale
