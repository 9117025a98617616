#include "core/config.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <sstream>
#include <toml++/toml.h>

#include "core/config_shape.hpp"
#include "core/error.hpp"
#include "core/text.hpp"

namespace gpuscale {

const std::vector<std::string>& backend_choices() {
  static const std::vector<std::string> v{"auto", "cpu", "cuda"};
  return v;
}

const std::vector<std::string>& comm_choices() {
  static const std::vector<std::string> v{"auto", "mpi", "nccl"};
  return v;
}

const std::vector<ExpectLimit>& expect_limits() {
  static const std::vector<ExpectLimit> v{
      {"max_median_s", "the median sample time, in seconds, at most"},
      {"min_gflops_per_rank", "GFLOP/s of one rank (report's GF/s/rank), at least; workloads rated in GFLOP/s"},
      {"min_gbps_per_rank", "GB/s of one rank (algbw for transfers), at least; workloads rated in GB/s, and transfers"},
      {"min_busbw_gbps", "bus bandwidth in GB/s (nccl-tests' busbw), at least; transfers"},
      {"min_efficiency", "parallel efficiency (speedup / serial turns, or / group_size), at least; in (0, 1]; not "
                         "applicable where a node runs more ranks (times threads on the CPU) than it has cores"},
      {"min_of_vendor", "GFLOP/s over the vendor library's on the same problem in the same run (report's 'of vendor'), "
                        "at least; cases of our kernels (impl other than vendor)"},
      {"max_slowest_ratio", "the slowest rank's median sample over the other ranks' median (report's straggler ratio), "
                            "at most; 1 or more"}};
  return v;
}

const std::vector<std::string>& mode_choices() {
  static const std::vector<std::string> v{mode_name(Mode::serial), mode_name(Mode::parallel)};
  return v;
}

const char* mode_name(Mode m) { return m == Mode::serial ? "serial" : "parallel"; }

std::optional<Mode> parse_mode(const std::string& s) {
  for (Mode m : {Mode::serial, Mode::parallel}) {
    if (s == mode_name(m)) return m;
  }
  return std::nullopt;
}

const char* type_name(ParamType t) {
  switch (t) {
    case ParamType::Int: return "an integer";
    case ParamType::Float: return "a number";
    case ParamType::String: return "a string";
    case ParamType::Bool: return "true or false";
  }
  return "?";
}

namespace {

constexpr const char* kSetPrefix = "--set ";

std::string where(const toml::source_region& src) {
  const std::string path = src.path ? *src.path : std::string("<config>");
  if (path.rfind(kSetPrefix, 0) == 0) return path;  // an override: "--set k=v"
  std::ostringstream os;
  os << path << ':' << src.begin.line << ':' << src.begin.column;
  return os.str();
}

[[noreturn]] void fail(const toml::source_region& src, const std::string& msg) {
  throw InputError(where(src) + ": " + msg);
}

std::string describe(const toml::node& n) {
  std::ostringstream os;
  switch (n.type()) {
    case toml::node_type::string: os << "string \"" << n.as_string()->get() << '"'; break;
    case toml::node_type::integer: os << "integer " << n.as_integer()->get(); break;
    case toml::node_type::floating_point: os << "number " << n.as_floating_point()->get(); break;
    case toml::node_type::boolean: os << (n.as_boolean()->get() ? "true" : "false"); break;
    case toml::node_type::array: os << "an array"; break;
    case toml::node_type::table: os << "a table"; break;
    default: os << "a " << n.type(); break;
  }
  return os.str();
}

// A bound of a key as the messages and docs/config.md write it.
std::string bound_text(double bound, ParamType t) {
  if (t == ParamType::Int) return std::to_string(static_cast<long long>(bound));
  return format_number("%.15g", bound) + (bound == kMaxDurationS ? " (30 days)" : "");
}

void check_bounds(const toml::node& n, const ParamSpec& spec, const std::string& key, const Value& v) {
  // Exact for every bound a spec sets (each below 2^53), so no integer slips past one by rounding.
  const double x = spec.type == ParamType::Int ? static_cast<double>(std::get<std::int64_t>(v)) : std::get<double>(v);
  if (x < spec.min || (spec.min_exclusive && x <= spec.min)) {
    fail(n.source(), key + (spec.min_exclusive ? " must be greater than " : " must be at least ") +
                         bound_text(spec.min, spec.type) + ", got " + to_string(v));
  }
  if (x > spec.max) {
    fail(n.source(), key + " must be at most " + bound_text(spec.max, spec.type) + ", got " + to_string(v));
  }
}

// Converts one scalar node to a Value of the spec's type, checking range and choices.
Value convert(const toml::node& n, const ParamSpec& spec, const std::string& context) {
  const std::string key = context + "key '" + spec.key + "'";
  Value v;
  switch (spec.type) {
    case ParamType::Int:
      if (!n.is_integer()) fail(n.source(), key + " must be " + type_name(spec.type) + ", got " + describe(n));
      v = n.as_integer()->get();
      break;
    case ParamType::Float:
      if (n.is_integer()) {
        v = static_cast<double>(n.as_integer()->get());
      } else if (n.is_floating_point() && std::isfinite(n.as_floating_point()->get())) {
        v = n.as_floating_point()->get();
      } else {
        fail(n.source(), key + " must be " + type_name(spec.type) + ", got " + describe(n));
      }
      break;
    case ParamType::String:
      if (!n.is_string()) fail(n.source(), key + " must be " + type_name(spec.type) + ", got " + describe(n));
      v = n.as_string()->get();
      break;
    case ParamType::Bool:
      if (!n.is_boolean()) fail(n.source(), key + " must be " + type_name(spec.type) + ", got " + describe(n));
      v = n.as_boolean()->get();
      break;
  }
  if (spec.type == ParamType::Int || spec.type == ParamType::Float) check_bounds(n, spec, key, v);
  if (spec.type == ParamType::String && !spec.choices.empty()) {
    const auto& s = std::get<std::string>(v);
    if (std::find(spec.choices.begin(), spec.choices.end(), s) == spec.choices.end()) {
      fail(n.source(), key + " must be one of " + join(spec.choices, ", ") + "; got \"" + s + "\"" +
                           did_you_mean(s, spec.choices));
    }
  }
  return v;
}

// The value after `x` in a range up to `hi`: x times the factor (an integer
// factor exactly, a fractional one rounded) or x plus the step, at least x + 1;
// nullopt past `hi`. Integer arithmetic that stops where it would overflow.
std::optional<std::int64_t> next_in_range(std::int64_t x, std::int64_t hi, const toml::node* factor,
                                          std::int64_t step) {
  if (x >= hi) return std::nullopt;
  std::int64_t next = 0;
  if (!factor) {
    if (__builtin_add_overflow(x, step, &next)) return std::nullopt;
  } else if (factor->is_integer()) {
    if (__builtin_mul_overflow(x, factor->as_integer()->get(), &next)) return std::nullopt;
  } else {
    const double y = std::round(static_cast<double>(x) * factor->as_floating_point()->get());
    if (!(y < 0x1p63)) return std::nullopt;  // past any integer (or infinite)
    next = static_cast<std::int64_t>(y);
  }
  next = std::max(next, x + 1);
  if (next > hi) return std::nullopt;
  return next;
}

// An integer range {from = A, to = B, factor = F} (geometric) or {..., step = S}
// (arithmetic): A, then each next value while it is at most B. A and B are
// values of the key, within its bounds.
std::vector<Value> expand_range(const toml::table& t, const ParamSpec& spec, const std::string& context) {
  const std::string key = context + "key '" + spec.key + "'";
  const std::string form = " (write {from = A, to = B, factor = F} or {from = A, to = B, step = S})";
  if (spec.type != ParamType::Int) fail(t.source(), key + " must be " + type_name(spec.type) + ", got a table");
  for (auto&& [k, v] : t) {
    const std::string name(k.str());
    if (name != "from" && name != "to" && name != "factor" && name != "step") {
      fail(k.source(), key + ": unknown range key '" + name + "'" + form);
    }
    if (name != "factor" && !v.is_integer()) fail(v.source(), key + ": range key '" + name + "' must be an integer");
  }
  const auto* from = t.get("from");
  const auto* to = t.get("to");
  const auto* factor = t.get("factor");
  const auto* step = t.get("step");
  if (!from || !to || (factor == nullptr) == (step == nullptr)) fail(t.source(), key + ": incomplete range" + form);
  const std::int64_t lo = std::get<std::int64_t>(convert(*from, spec, context));
  const std::int64_t hi = to->as_integer()->get();
  if (hi < lo) fail(to->source(), key + ": range 'to' (" + std::to_string(hi) + ") is below 'from' (" + std::to_string(lo) + ")");
  convert(*to, spec, context);  // within the key's maximum
  if (factor) {
    if (!factor->is_number()) fail(factor->source(), key + ": range key 'factor' must be a number");
    const double f = factor->is_integer() ? static_cast<double>(factor->as_integer()->get())
                                          : factor->as_floating_point()->get();
    if (!(f > 1.0)) fail(factor->source(), key + ": range 'factor' must be greater than 1");
  } else if (step->as_integer()->get() < 1) {
    fail(step->source(), key + ": range 'step' must be at least 1");
  }
  constexpr std::size_t kMaxValues = 10000;
  std::vector<Value> out;
  for (std::optional<std::int64_t> x = lo; x; x = next_in_range(*x, hi, factor, step ? step->as_integer()->get() : 0)) {
    if (out.size() == kMaxValues) fail(t.source(), key + ": range has more than 10000 values");
    out.emplace_back(*x);
  }
  return out;
}

// A scalar, an array of scalars, or a range table (a sweep): the list of values.
std::vector<Value> convert_list(const toml::node& n, const ParamSpec& spec, const std::string& context) {
  std::vector<Value> out;
  if (const auto* arr = n.as_array()) {
    if (arr->empty()) fail(n.source(), context + "key '" + spec.key + "' is an empty list; give at least one value");
    for (const auto& e : *arr) {
      if (e.is_array() || e.is_table()) {
        fail(e.source(), context + "key '" + spec.key + "' must be " + type_name(spec.type) +
                             " or a list of them, got " + describe(e) + " inside the list");
      }
      out.push_back(convert(e, spec, context));
    }
  } else if (const auto* t = n.as_table()) {
    out = expand_range(*t, spec, context);
  } else {
    out.push_back(convert(n, spec, context));
  }
  return out;
}

std::vector<ParamSpec> defaults_specs() {
  const auto any = std::numeric_limits<double>::infinity();
  return {
      {"backend", ParamType::String, "auto | cpu | cuda", Value{std::string("auto")}, 0, backend_choices()},
      {"comm", ParamType::String, "auto | mpi | nccl: what moves data between ranks", Value{std::string("auto")}, 0,
       comm_choices()},
      {"warmup", ParamType::Int, "untimed samples before the timed ones", Value{std::int64_t{2}}, 0, {}, kMaxCount},
      {"warmup_s", ParamType::Float,
       "warm up for at least this many seconds as well (default: 0.5 on the CUDA backend, 0 on the CPU)",
       std::nullopt, 0, {}, kMaxDurationS},
      {"reps", ParamType::Int, "timed samples per rank", Value{std::int64_t{10}}, 1, {}, kMaxCount},
      {"threads", ParamType::Int, "threads per rank on the CPU backend (BLAS, elementwise loops)",
       Value{std::int64_t{1}}, 1, {}, static_cast<double>(kMaxThreads)},
      {"timeout", ParamType::Float,
       "seconds a case may run before the job is aborted; 0: derived from the case's warm-up (docs/metrics.md)",
       Value{0.0}, 0, {}, kMaxDurationS},
      // Any seed TOML can write (a 64-bit integer) is one the generator takes.
      {"seed", ParamType::Int, "seed of the input generator", Value{std::int64_t{42}}, 0, {}, any},
      {"share_devices", ParamType::Bool, "allow ranks of one node to share a GPU", Value{false}, 0, {}},
      {"budget_s", ParamType::Float,
       "refuse a plan estimated to take longer than this many seconds (check prints the estimate); 0: none, but a "
       "plan over 24 h is refused as a likely typo; --time-budget overrides it", Value{0.0}, 0, {}, kMaxDurationS},
  };
}

// Keys of an experiment that are not parameters of its workload.
const std::vector<std::string>& experiment_fixed_keys() {
  static const std::vector<std::string> v{"name", "workload", "modes", "expect"};
  return v;
}

// Parameters every experiment has; their defaults come from [defaults].
std::vector<ParamSpec> common_specs(const Defaults& d) {
  auto specs = defaults_specs();
  std::vector<ParamSpec> out;
  for (auto& s : specs) {
    if (s.key == "warmup") s.default_value = Value{d.warmup};
    else if (s.key == "warmup_s") s.default_value = d.warmup_s ? std::optional<Value>(Value{*d.warmup_s}) : std::nullopt;
    else if (s.key == "reps") s.default_value = Value{d.reps};
    else if (s.key == "threads") s.default_value = Value{d.threads};
    else continue;
    out.push_back(s);
  }
  return out;
}

std::vector<std::string> keys_of(const std::vector<ParamSpec>& specs) {
  std::vector<std::string> out;
  for (const auto& s : specs) out.push_back(s.key);
  return out;
}

const WorkloadSchema* find_schema(const std::vector<WorkloadSchema>& ws, const std::string& name) {
  for (const auto& w : ws) {
    if (w.name == name) return &w;
  }
  return nullptr;
}

std::vector<std::string> workload_names(const std::vector<WorkloadSchema>& ws) {
  std::vector<std::string> out;
  for (const auto& w : ws) out.push_back(w.name);
  return out;
}

// All keys an experiment of this workload accepts, for messages and --set.
std::vector<std::string> experiment_keys(const WorkloadSchema* w) {
  auto keys = experiment_fixed_keys();
  for (const auto& k : keys_of(common_specs(Defaults{}))) keys.push_back(k);
  if (w) {
    for (const auto& s : w->params) keys.push_back(s.key);
  }
  return keys;
}

// The value of "--set KEY=VALUE" as a parsed TOML node whose source names the override.
// TOML ("[256, 512]", "2.5", "\"fp32\"") is read as such; a bare word is taken as a string.
toml::table parse_override_value(const std::string& value, const std::string& source) {
  check_config_shape("v = " + value, source, false);
  try {
    return toml::parse("v = " + value, source);
  } catch (const toml::parse_error&) {
  }
  std::string quoted;
  for (char c : value) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  try {
    return toml::parse("v = \"" + quoted + "\"", source);
  } catch (const toml::parse_error& e) {
    throw InputError(source + ": cannot read the value: " + std::string(e.description()));
  }
}

// toml++ drops source positions when a node is copied, so each target gets a
// freshly parsed value, moved in.
void set_override(toml::table& t, const std::string& key, const std::string& value, const std::string& source) {
  toml::table snippet = parse_override_value(value, source);
  toml::node& n = *snippet.get("v");
  switch (n.type()) {
    case toml::node_type::array: t.insert_or_assign(key, std::move(*n.as_array())); break;
    case toml::node_type::table: t.insert_or_assign(key, std::move(*n.as_table())); break;
    case toml::node_type::string: t.insert_or_assign(key, std::move(*n.as_string())); break;
    case toml::node_type::integer: t.insert_or_assign(key, std::move(*n.as_integer())); break;
    case toml::node_type::floating_point: t.insert_or_assign(key, std::move(*n.as_floating_point())); break;
    case toml::node_type::boolean: t.insert_or_assign(key, std::move(*n.as_boolean())); break;
    default: throw InputError(source + ": unsupported value (dates and times are not parameters)");
  }
}

// "--set KEY=VALUE" as messages name it, a long value cut short.
std::string override_source(const std::string& text) {
  constexpr std::size_t kShown = 60;
  if (text.size() <= kShown + 20) return kSetPrefix + text;
  return kSetPrefix + text.substr(0, kShown) + "... (" + std::to_string(text.size()) + " characters)";
}

void apply_override(toml::table& root, const std::string& text, const std::vector<WorkloadSchema>& workloads) {
  const std::string source = override_source(text);
  if (text.find_first_of("\r\n") != std::string::npos) {  // TOML would read what follows as more lines of the file
    throw InputError(source + ": holds a line break; a --set is one line (arrays and inline tables fit on one)");
  }
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw InputError(source + ": expected KEY=VALUE (e.g. --set reps=5 or --set gemm-512.size=1024)");
  }
  std::string key = text.substr(0, eq);
  const std::string value = text.substr(eq + 1);
  std::string scope;
  if (const auto dot = key.find('.'); dot != std::string::npos) {
    scope = key.substr(0, dot);
    key = key.substr(dot + 1);
  }
  const auto dkeys = keys_of(defaults_specs());
  // defaults.expect: the run's limits, a table; a bare 'expect' stays every experiment's own.
  const bool is_default_key =
      std::find(dkeys.begin(), dkeys.end(), key) != dkeys.end() || (scope == "defaults" && key == "expect");

  if (scope == "defaults" || (scope.empty() && is_default_key)) {
    if (!is_default_key) {
      throw InputError(source + ": unknown key 'defaults." + key + "'" + did_you_mean(key, dkeys) +
                       "; valid keys: " + join(dkeys, ", "));
    }
    if (!root.contains("defaults")) root.insert("defaults", toml::table{});
    if (auto* d = root["defaults"].as_table()) set_override(*d, key, value, source);
    return;
  }
  std::vector<std::string> names;
  std::vector<std::string> all_keys = dkeys;
  bool applied = false;
  if (auto* experiments = root["experiment"].as_array()) {
    for (auto& e : *experiments) {
      auto* t = e.as_table();
      if (!t) continue;
      const auto* name = t->get_as<std::string>("name");
      names.push_back(name ? name->get() : "");
      if (!scope.empty() && scope != names.back()) continue;
      const auto* wl = t->get_as<std::string>("workload");
      const auto keys = experiment_keys(find_schema(workloads, wl ? wl->get() : ""));
      all_keys.insert(all_keys.end(), keys.begin(), keys.end());
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
        if (!scope.empty()) {
          throw InputError(source + ": experiment '" + scope + "' has no key '" + key + "'" + did_you_mean(key, keys) +
                           "; valid keys: " + join(keys, ", "));
        }
        continue;
      }
      set_override(*t, key, value, source);
      applied = true;
    }
  }
  if (!scope.empty() && std::find(names.begin(), names.end(), scope) == names.end()) {
    throw InputError(source + ": no experiment named '" + scope + "'" + did_you_mean(scope, names) +
                     "; experiments: " + join(names, ", ") + " (or use defaults." + key + ")");
  }
  if (!applied) {
    std::sort(all_keys.begin(), all_keys.end());
    all_keys.erase(std::unique(all_keys.begin(), all_keys.end()), all_keys.end());
    throw InputError(source + ": unknown key '" + key + "'" + did_you_mean(key, all_keys) +
                     "; valid keys: " + join(all_keys, ", "));
  }
}

void parse_defaults(const toml::table& t, Defaults& d) {
  const auto specs = defaults_specs();
  const auto keys = keys_of(specs);
  for (auto&& [k, node] : t) {
    const std::string key(k.str());
    if (key == "expect") continue;  // the run's limits: read once the experiments are known (apply_default_limits)
    auto it = std::find_if(specs.begin(), specs.end(), [&](const ParamSpec& s) { return s.key == key; });
    if (it == specs.end()) {
      std::vector<std::string> near = keys;
      near.push_back("expect");
      fail(k.source(), "unknown key '" + key + "' in [defaults]" + did_you_mean(key, near) +
                           "; valid keys: " + join(keys, ", ") + ", and the table [defaults.expect]");
    }
    if (node.is_array() || node.is_table()) {
      fail(node.source(), "[defaults] key '" + key + "' must be " + type_name(it->type) + ", got " + describe(node) +
                              " (lists belong in an [[experiment]])");
    }
    const Value v = convert(node, *it, "[defaults] ");
    if (key == "backend") d.backend = std::get<std::string>(v);
    else if (key == "comm") d.comm = std::get<std::string>(v);
    else if (key == "warmup") d.warmup = std::get<std::int64_t>(v);
    else if (key == "warmup_s") d.warmup_s = std::get<double>(v);
    else if (key == "reps") d.reps = std::get<std::int64_t>(v);
    else if (key == "threads") d.threads = std::get<std::int64_t>(v);
    else if (key == "timeout") d.timeout_s = std::get<double>(v);
    else if (key == "seed") d.seed = std::get<std::int64_t>(v);
    else if (key == "share_devices") d.share_devices = std::get<bool>(v);
    else if (key == "budget_s") d.budget_s = std::get<double>(v);
  }
}

// Whether a limit can be measured on an experiment's cases: "" if so, else why not.
std::string limit_unfit(const std::string& key, const WorkloadSchema& w, const Experiment& e) {
  const auto rate_name = [&] {
    return w.rate == RateKind::flops ? "GFLOP/s" : w.rate == RateKind::bytes ? "GB/s" : "algbw and busbw";
  };
  if (key == "min_gflops_per_rank" && w.rate != RateKind::flops) {
    return std::string("workload ") + w.name + " is rated in " + rate_name() + ", not GFLOP/s";
  }
  if (key == "min_gbps_per_rank" && w.rate == RateKind::flops) {
    return "workload " + w.name + " is rated in GFLOP/s, not GB/s";
  }
  if (key == "min_busbw_gbps" && w.rate != RateKind::transfer) {
    return std::string("workload ") + w.name + " moves no data between ranks (busbw is a collective's)";
  }
  if (key == "min_of_vendor") {
    if (!w.of_vendor) {
      return "workload " + w.name + " has no vendor share (of vendor compares our kernels with the vendor library's)";
    }
    for (const auto& [param, values] : e.params) {
      if (param != "impl") continue;
      const bool ours = std::any_of(values.begin(), values.end(), [](const Value& v) {
        return !std::holds_alternative<std::string>(v) || std::get<std::string>(v) != "vendor";
      });
      if (!ours) {
        return "every case is impl = \"vendor\"; the limit bounds our kernels' share of it (list them in impl, "
               "beside \"vendor\" here or in another experiment of the run)";
      }
    }
  }
  const bool both_modes = std::find(e.modes.begin(), e.modes.end(), Mode::serial) != e.modes.end() &&
                          std::find(e.modes.begin(), e.modes.end(), Mode::parallel) != e.modes.end();
  const bool strong_scaling = std::any_of(w.params.begin(), w.params.end(),
                                          [](const ParamSpec& s) { return s.key == "group_size"; });
  if (key == "min_efficiency" && !both_modes && !strong_scaling) {
    return "efficiency needs modes serial and parallel (speedup of parallel over serial / turns)";
  }
  return "";
}

std::vector<std::string> limit_names() {
  std::vector<std::string> keys;
  for (const auto& l : expect_limits()) keys.push_back(l.key);
  return keys;
}

// A table of limits ([experiment.expect] or [defaults.expect], named `table`): each key a known limit, each value a
// number within that limit's bounds. `ctx` starts each message. The limits in the order of their names.
std::vector<std::pair<const toml::key*, double>> read_limits(const toml::node& n, const std::string& ctx,
                                                             const std::string& table) {
  const auto keys = limit_names();
  const auto* t = n.as_table();
  if (!t) {
    fail(n.source(), (ctx.empty() ? "[defaults] key " : ctx) + "'expect' must be a table of limits, e.g. " + table +
                         " with " + join(keys, ", ") + "; got " + describe(n));
  }
  std::vector<std::pair<const toml::key*, double>> out;
  for (auto&& [k, v] : *t) {
    const std::string key(k.str());
    const std::string what = ctx + table + " " + key;
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      fail(k.source(), ctx + "unknown limit '" + key + "' in " + table + did_you_mean(key, keys) +
                           "; valid limits: " + join(keys, ", "));
    }
    if (!v.is_number()) fail(v.source(), what + " must be a number, got " + describe(v));
    const double x = v.is_integer() ? static_cast<double>(v.as_integer()->get()) : v.as_floating_point()->get();
    if (!(x > 0) || !std::isfinite(x)) fail(v.source(), what + " must be above 0, got " + describe(v));
    if (key == "max_median_s" && x > kMaxDurationS) {
      fail(v.source(),
           what + " must be at most " + bound_text(kMaxDurationS, ParamType::Float) + ", got " + describe(v));
    }
    if (key == "min_efficiency" && x > 1) {
      fail(v.source(), what + " is a share of perfect scaling: above 0 and at most 1 (e.g. 0.8), got " + describe(v));
    }
    // The slowest rank's median is at least the other ranks' median: a bound below 1 could never hold.
    if (key == "max_slowest_ratio" && x < 1) {
      fail(v.source(), what + " is the slowest rank's median over the other ranks' median, 1 or more: at least 1 (e.g. "
                              "1.5), got " + describe(v));
    }
    out.emplace_back(&k, x);
  }
  return out;
}

void parse_expect(const toml::node& n, const WorkloadSchema& w, Experiment& e, const std::string& ctx) {
  for (const auto& [k, x] : read_limits(n, ctx, "[experiment.expect]")) {
    const std::string key(k->str());
    if (const std::string why = limit_unfit(key, w, e); !why.empty()) {
      fail(k->source(), ctx + "[experiment.expect] " + key + " cannot be measured here: " + why);
    }
    e.expect.emplace_back(key, x);
  }
}

// [defaults.expect]: each limit bounds every experiment that can measure it and does not set it itself (a
// min_efficiency of the run leaves out the experiments of one mode); one that no experiment can measure is a
// mistake, named with an experiment's reason.
void apply_default_limits(const toml::node& n, const std::vector<WorkloadSchema>& workloads,
                          std::vector<Experiment>& experiments) {
  for (const auto& [k, x] : read_limits(n, "", "[defaults.expect]")) {
    const std::string key(k->str());
    bool bounds_one = false;
    std::string unfit;
    for (auto& e : experiments) {
      const bool own = std::any_of(e.expect.begin(), e.expect.end(), [&](const auto& l) { return l.first == key; });
      const std::string why = own ? "" : limit_unfit(key, *find_schema(workloads, e.workload), e);
      if (!own && why.empty()) e.expect.emplace_back(key, x);
      if (why.empty()) bounds_one = true;
      else if (unfit.empty()) unfit = "experiment '" + e.name + "': " + why;
    }
    if (!bounds_one) fail(k->source(), "[defaults.expect] " + key + " cannot be measured by any experiment: " + unfit);
  }
  for (auto& e : experiments) std::sort(e.expect.begin(), e.expect.end());  // by name, as [experiment.expect]'s
}

Experiment parse_experiment(const toml::table& t, std::size_t index, const Defaults& d,
                            const std::vector<WorkloadSchema>& workloads) {
  Experiment e;
  e.name = "experiment #" + std::to_string(index + 1);
  std::string ctx = e.name + ": ";
  if (auto n = t.get("name")) {
    if (!n->is_string() || n->as_string()->get().empty()) {
      fail(n->source(), ctx + "key 'name' must be a non-empty string, got " + describe(*n));
    }
    e.name = n->as_string()->get();
    if (e.name.find('/') != std::string::npos) fail(n->source(), ctx + "key 'name' must not contain '/'");
    // Names reach terminals, CSV and the result file, and two that differ after a NUL would be one name there.
    if (const std::string why = text_problem(e.name); !why.empty()) {
      fail(n->source(), ctx + "key 'name' must be text without control characters, got \"" + printable(e.name) +
                            "\": " + why);
    }
    ctx = "experiment '" + e.name + "': ";
  }
  const auto names = workload_names(workloads);
  const toml::node* wl = t.get("workload");
  if (!wl) fail(t.source(), ctx + "missing key 'workload' (one of " + join(names, ", ") + ")");
  if (!wl->is_string()) fail(wl->source(), ctx + "key 'workload' must be a string, got " + describe(*wl));
  e.workload = wl->as_string()->get();
  const WorkloadSchema* schema = find_schema(workloads, e.workload);
  if (!schema) {
    fail(wl->source(), ctx + "unknown workload \"" + e.workload + "\"" + did_you_mean(e.workload, names) +
                           "; valid workloads: " + join(names, ", "));
  }

  std::vector<ParamSpec> specs = common_specs(d);
  specs.insert(specs.end(), schema->params.begin(), schema->params.end());
  const auto valid = experiment_keys(schema);

  for (auto&& [k, node] : t) {
    const std::string key(k.str());
    if (std::find(valid.begin(), valid.end(), key) == valid.end()) {
      fail(k.source(), ctx + "unknown key '" + key + "'" + did_you_mean(key, valid) +
                           "; valid keys: " + join(valid, ", "));
    }
  }

  ParamSpec mode_spec{"modes", ParamType::String, "", std::nullopt, 0, mode_choices()};
  if (auto m = t.get("modes")) {
    for (const auto& v : convert_list(*m, mode_spec, ctx)) {
      const auto& s = std::get<std::string>(v);
      const Mode mode = *parse_mode(s);  // one of mode_choices(): convert_list checked it
      if (std::find(e.modes.begin(), e.modes.end(), mode) != e.modes.end()) {
        fail(m->source(), ctx + "mode \"" + s + "\" is listed twice");
      }
      e.modes.push_back(mode);
    }
  } else {
    e.modes = {Mode::serial, Mode::parallel};
  }

  for (const auto& spec : specs) {
    if (auto n = t.get(spec.key)) {
      e.params.emplace_back(spec.key, convert_list(*n, spec, ctx));
    } else if (spec.default_value) {
      e.params.emplace_back(spec.key, std::vector<Value>{*spec.default_value});
    }
  }
  if (auto x = t.get("expect")) parse_expect(*x, *schema, e, ctx);
  return e;
}

}  // namespace

std::vector<ParamSpec> case_common_specs(const Defaults& d) { return common_specs(d); }

Config parse_config(const std::string& text, const std::string& source, const std::vector<std::string>& overrides,
                    const std::vector<WorkloadSchema>& workloads, const Defaults& base) {
  Config cfg;
  cfg.defaults = base;
  cfg.source = source;
  cfg.text = text;
  cfg.overrides = overrides;
  check_config_shape(text, source);
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    fail(e.source(), "TOML syntax error: " + std::string(e.description()));
  }

  for (const auto& o : overrides) apply_override(root, o, workloads);

  static const std::vector<std::string> top{"defaults", "experiment"};
  for (auto&& [k, node] : root) {
    const std::string key(k.str());
    if (std::find(top.begin(), top.end(), key) == top.end()) {
      fail(k.source(), "unknown top-level key '" + key + "'" + did_you_mean(key, top) +
                           "; valid: [defaults] and [[experiment]] tables");
    }
  }
  if (auto d = root.get("defaults")) {
    if (!d->is_table()) fail(d->source(), "'defaults' must be a table: [defaults]");
    parse_defaults(*d->as_table(), cfg.defaults);
  }
  const toml::node* ex = root.get("experiment");
  if (!ex) throw InputError(source + ": no experiments: add at least one [[experiment]] table");
  const toml::array* arr = ex->as_array();
  if (!arr || !arr->is_array_of_tables() || arr->empty()) {
    fail(ex->source(), "'experiment' must be a list of tables: write each as [[experiment]]");
  }
  for (std::size_t i = 0; i < arr->size(); ++i) {
    Experiment e = parse_experiment(*arr->get(i)->as_table(), i, cfg.defaults, workloads);
    for (const auto& other : cfg.experiments) {
      if (other.name == e.name) fail(arr->get(i)->source(), "two experiments are named '" + e.name + "'");
    }
    cfg.experiments.push_back(std::move(e));
  }
  if (const toml::node* d = root.get("defaults"); d && d->as_table()->get("expect")) {
    apply_default_limits(*d->as_table()->get("expect"), workloads, cfg.experiments);
  }
  return cfg;
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides,
                   const std::vector<WorkloadSchema>& workloads, const Defaults& base) {
  return parse_config(read_config_file(path), path, overrides, workloads, base);
}

Defaults environment_defaults(const char* cpus_per_task) {
  Defaults d;
  if (cpus_per_task) {
    char* end = nullptr;
    const long n = std::strtol(cpus_per_task, &end, 10);
    if (end != cpus_per_task && *end == '\0' && n >= 1 && n <= kMaxThreads) d.threads = n;
  }
  return d;
}

}  // namespace gpuscale
