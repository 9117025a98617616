#include "core/plan.hpp"

#include <algorithm>

namespace gpuscale {

const std::vector<std::string>& runner_param_keys() {
  static const std::vector<std::string> v{"warmup", "warmup_s", "reps", "threads"};
  return v;
}

std::string Case::param_label() const {
  std::string out;
  const auto& skip = runner_param_keys();
  for (const auto& [k, v] : params.items()) {
    if (std::find(skip.begin(), skip.end(), k) != skip.end()) continue;
    if (!out.empty()) out += ' ';
    out += k + '=' + to_string(v);
  }
  return out;
}

std::string Case::label() const {
  const std::string p = param_label();
  return experiment + (p.empty() ? "" : " " + p) + " [" + mode + "]";
}

std::vector<Case> expand(const Config& cfg) {
  std::vector<Case> cases;
  for (const auto& e : cfg.experiments) {
    std::size_t combos = 1;
    for (const auto& kv : e.params) combos *= kv.second.size();
    for (std::size_t n = 0; n < combos; ++n) {
      // Mixed-radix digits of n, the last parameter turning fastest.
      std::vector<std::size_t> digit(e.params.size());
      std::size_t rest = n;
      for (std::size_t i = e.params.size(); i-- > 0;) {
        digit[i] = rest % e.params[i].second.size();
        rest /= e.params[i].second.size();
      }
      Params p;
      for (std::size_t i = 0; i < e.params.size(); ++i) p.set(e.params[i].first, e.params[i].second[digit[i]]);
      for (const auto& mode : e.modes) {
        Case c;
        c.index = cases.size();
        c.experiment = e.name;
        c.workload = e.workload;
        c.mode = mode;
        c.params = p;
        c.expect = e.expect;
        cases.push_back(std::move(c));
      }
    }
  }
  return cases;
}

}  // namespace gpuscale
