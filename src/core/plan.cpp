#include "core/plan.hpp"

#include <algorithm>
#include <cstdint>

#include "core/error.hpp"

namespace gpuscale {

const std::vector<std::string>& runner_param_keys() {
  static const std::vector<std::string> v{"warmup", "warmup_s", "reps", "threads"};
  return v;
}

const std::vector<std::string>& sample_count_keys() {
  static const std::vector<std::string> v{"warmup", "warmup_s", "reps"};
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
  return experiment + (p.empty() ? "" : " " + p) + " [" + mode_name(mode) + "]";
}

std::string Case::numbered(std::size_t cases) const {
  return "case " + std::to_string(number()) + " of " + std::to_string(cases) + " (" + label() + ")";
}

namespace {

std::size_t saturating_multiply(std::size_t a, std::size_t b) {
  if (a != 0 && b > SIZE_MAX / a) return SIZE_MAX;
  return a * b;
}

std::size_t experiment_size(const Experiment& e) {
  std::size_t n = e.modes.size();
  for (const auto& kv : e.params) n = saturating_multiply(n, kv.second.size());
  return n;
}

std::string count(std::size_t n) { return n == SIZE_MAX ? "more than " + std::to_string(SIZE_MAX) : std::to_string(n); }

}  // namespace

std::size_t plan_size(const Config& cfg) {
  std::size_t n = 0;
  for (const auto& e : cfg.experiments) {
    const std::size_t m = experiment_size(e);
    n = n > SIZE_MAX - m ? SIZE_MAX : n + m;
  }
  return n;
}

void check_plan_size(const Config& cfg, std::size_t max_cases) {
  const std::size_t n = plan_size(cfg);
  if (n <= max_cases) return;
  std::string why;
  for (const auto& e : cfg.experiments) {
    const std::size_t m = experiment_size(e);
    if (m < 2) continue;
    // The keys with more than one value, longest list first: those multiply.
    std::vector<std::pair<std::size_t, std::string>> lists;
    for (const auto& [key, values] : e.params) {
      if (values.size() > 1) lists.emplace_back(values.size(), key);
    }
    if (e.modes.size() > 1) lists.emplace_back(e.modes.size(), "modes");
    std::stable_sort(lists.begin(), lists.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::string product;
    for (const auto& [len, key] : lists) product += (product.empty() ? "" : " x ") + key + " (" + std::to_string(len) + ")";
    why += "; experiment '" + e.name + "': " + product + " = " + count(m);
  }
  throw InputError(cfg.source + ": the plan has " + count(n) + " cases, more than --max-cases " +
                   std::to_string(max_cases) + why + "; shorten those lists, or raise --max-cases if you mean it");
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
