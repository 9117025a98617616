// A config from its text in tests, as `run` reads one (exp.toml, the registry's workload schemas), and the message
// of the InputError it gives ("no error" where it reads).
#pragma once

#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "workloads/workload.hpp"

namespace gpuscale::testing {

inline Config parse(const std::string& text, const std::vector<std::string>& sets = {}) {
  return parse_config(text, "exp.toml", sets, workload_schemas());
}

inline std::string error_of(const std::string& text, const std::vector<std::string>& sets = {}) {
  try {
    parse(text, sets);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace gpuscale::testing
