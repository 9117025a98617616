// Command-line pieces that several subcommands share, so that they read the same in every --help.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
class ParseError;
class Validator;
}  // namespace CLI

namespace gpuscale {

// The end of the help of a command that reads a config: each workload, its description and its keys.
std::string workloads_help();

// Checks of an option's value whose messages say what it takes; CLI11 puts the option's name first
// ("--ranks: must be a whole number of ranks from 1 to 2147483647, got 0"). `name` is what --help shows.
// A number that `ok` accepts; else "must be MUST, got TEXT".
CLI::Validator number_validator(const std::string& name, std::function<bool(double)> ok, const std::string& must);
// A whole number from 1 to INT_MAX, e.g. of "ranks".
CLI::Validator whole_number_validator(const std::string& of_what);
// One of `choices`, with the nearest one where the value is a near miss.
CLI::Validator choice_validator(const std::vector<std::string>& choices);

// A mistake on the command line of `cmd` (`command`: "gpuscale report") as one line that names the option and points
// at the command's own --help: CLI11's message, reworded where it says least (an option without its value, an
// option the command does not have).
std::string parse_error_text(const CLI::App& cmd, const CLI::ParseError& e, const std::string& command);

// --max-cases and --time-budget, the limits a plan is checked against before anything runs ('run' and 'check').
void add_plan_limits(CLI::App& cmd, std::size_t& max_cases, double& time_budget_s);

}  // namespace gpuscale
