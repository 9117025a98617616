#include "core/config.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <sstream>
#include <toml++/toml.h>
#include <tuple>

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

// A mistake at a place in the file, so that a config's mistakes are listed in the file's order (line 0: an
// override's, or one of the whole file).
class PlacedError : public InputError {
 public:
  PlacedError(const std::string& what, std::uint32_t at_line, std::uint32_t at_column)
      : InputError(what), line(at_line), column(at_column) {}
  std::uint32_t line, column;
};

[[noreturn]] void fail(const toml::source_region& src, const std::string& msg) {
  const bool in_file = !(src.path && src.path->rfind(kSetPrefix, 0) == 0);
  throw PlacedError(where(src) + ": " + msg, in_file ? src.begin.line : 0, in_file ? src.begin.column : 0);
}

// Every mistake of a config, not only the first: each part that can be read on its own (an override, a key, an
// experiment) is read through `attempt`, and the InputError it throws becomes one more line. `finish` throws them
// all as one InputError: a line each (control characters in them escaped, so a line break only parts two), in the
// file's order after the overrides', at most kShown and then how many more.
class Mistakes {
 public:
  explicit Mistakes(std::string source) : source_(std::move(source)) {}

  template <class Read>
  bool attempt(Read&& read) {
    try {
      read();
      return true;
    } catch (const PlacedError& e) {
      lines_.push_back({e.line, e.column, e.what()});
    } catch (const InputError& e) {
      lines_.push_back({0, 0, e.what()});
    }
    return false;
  }
  std::size_t count() const { return lines_.size(); }
  void finish() const;

 private:
  static constexpr std::size_t kShown = 20;
  struct Line {
    std::uint32_t line, column;
    std::string text;
  };
  std::string source_;
  std::vector<Line> lines_;
};

void Mistakes::finish() const {
  if (lines_.empty()) return;
  std::vector<Line> sorted = lines_;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Line& a, const Line& b) { return std::tie(a.line, a.column) < std::tie(b.line, b.column); });
  std::vector<std::string> text;
  for (std::size_t i = 0; i < sorted.size() && i < kShown; ++i) text.push_back(printable(sorted[i].text));
  if (sorted.size() > kShown) {
    text.push_back(printable(source_) + ": " + std::to_string(sorted.size() - kShown) + " more mistake(s) not shown");
  }
  throw InputError(join(text, "\n"));
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

// `v` within the key's range. `written`: the value as the config wrote it where that was not a number ("16M").
void check_bounds(const toml::node& n, const ParamSpec& spec, const std::string& key, const Value& v,
                  const std::string& written = "") {
  // Exact for every bound a spec sets (each below 2^53), so no integer slips past one by rounding.
  const double x = spec.type == ParamType::Int ? static_cast<double>(std::get<std::int64_t>(v)) : std::get<double>(v);
  const std::string got = to_string(v) + (written.empty() ? "" : " (\"" + written + "\")");
  if (x < spec.min || (spec.min_exclusive && x <= spec.min)) {
    fail(n.source(), key + (spec.min_exclusive ? " must be greater than " : " must be at least ") +
                         bound_text(spec.min, spec.type) + ", got " + got);
  }
  if (x > spec.max) fail(n.source(), key + " must be at most " + bound_text(spec.max, spec.type) + ", got " + got);
}

// What a size key takes, for the messages of a value that is none.
constexpr const char* kSizeForms =
    "a size in bytes: an integer, or a string such as \"64K\", \"16M\", \"1G\" (K, M, G, T: powers of 1024)";

// The bytes of a size written as a string ("16M"), for `key` (a size key).
std::int64_t size_of(const toml::node& n, const ParamSpec& spec, const std::string& key) {
  const std::string& text = n.as_string()->get();
  const ParsedSize size = parse_size(text);
  const std::string quoted = "\"" + text + "\"";
  switch (size.problem) {
    case SizeProblem::none: return size.bytes;
    case SizeProblem::negative: fail(n.source(), key + ": " + quoted + " is negative; a size counts bytes");
    case SizeProblem::not_whole:
      fail(n.source(), key + ": " + quoted + " is not a whole number of bytes (" + format_number("%.15g", size.approx) +
                           ")");
    case SizeProblem::too_large:
      fail(n.source(), key + " must be at most " + bound_text(spec.max, spec.type) + ", got " + quoted);
    case SizeProblem::decimal_unit: {  // "16MB": 10^6 or 2^20 bytes?
      const std::size_t first = text.find_first_not_of(' '), last = text.find_last_not_of(' ');
      const std::string stem = text.substr(first, last - first);  // without the B
      fail(n.source(), key + ": " + quoted + " could mean powers of 1000 or of 1024; write \"" + stem + "\" or \"" +
                           stem + "iB\" (powers of 1024)");
    }
    case SizeProblem::not_a_size: break;
  }
  // A --set of a list or range of sizes without quotes reads as one bare word.
  const bool unquoted = !text.empty() && (text[0] == '[' || text[0] == '{');
  fail(n.source(), key + " must be " + kSizeForms + "; got " + describe(n) +
                       (unquoted ? " (in a list or range, quote each size: [\"1K\", \"4K\"])" : ""));
}

// One scalar node as a Value of the spec's type, not yet checked against range or choices.
Value scalar(const toml::node& n, const ParamSpec& spec, const std::string& key) {
  const auto wrong = [&] { fail(n.source(), key + " must be " + type_name(spec.type) + ", got " + describe(n)); };
  switch (spec.type) {
    case ParamType::Int:
      if (is_size(spec) && n.is_string()) return size_of(n, spec, key);
      if (is_size(spec) && !n.is_integer()) fail(n.source(), key + " must be " + kSizeForms + "; got " + describe(n));
      if (!n.is_integer()) wrong();
      return n.as_integer()->get();
    case ParamType::Float:
      if (n.is_integer()) return static_cast<double>(n.as_integer()->get());
      if (!n.is_floating_point() || !std::isfinite(n.as_floating_point()->get())) wrong();
      return n.as_floating_point()->get();
    case ParamType::String:
      if (!n.is_string()) wrong();
      return n.as_string()->get();
    case ParamType::Bool:
      if (!n.is_boolean()) wrong();
      return n.as_boolean()->get();
  }
  wrong();
  return {};
}

// Converts one scalar node to a Value of the spec's type, checking range and choices.
Value convert(const toml::node& n, const ParamSpec& spec, const std::string& context) {
  const std::string key = context + "key '" + spec.key + "'";
  const Value v = scalar(n, spec, key);
  if (spec.type == ParamType::Int || spec.type == ParamType::Float) {
    check_bounds(n, spec, key, v, n.is_string() ? n.as_string()->get() : "");
  }
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
    if (name != "factor" && !v.is_integer() && !(is_size(spec) && v.is_string())) {
      fail(v.source(), key + ": range key '" + name + "' must be an integer" +
                           (is_size(spec) ? " or a size such as \"64K\"" : ""));
    }
  }
  const auto* from = t.get("from");
  const auto* to = t.get("to");
  const auto* factor = t.get("factor");
  const auto* step = t.get("step");
  if (!from || !to || (factor == nullptr) == (step == nullptr)) fail(t.source(), key + ": incomplete range" + form);
  const std::int64_t lo = std::get<std::int64_t>(convert(*from, spec, context));
  const std::int64_t hi = std::get<std::int64_t>(scalar(*to, spec, key));
  if (hi < lo) fail(to->source(), key + ": range 'to' (" + std::to_string(hi) + ") is below 'from' (" + std::to_string(lo) + ")");
  convert(*to, spec, context);  // within the key's maximum
  if (factor) {
    if (!factor->is_number()) fail(factor->source(), key + ": range key 'factor' must be a number");
    const double f = factor->is_integer() ? static_cast<double>(factor->as_integer()->get())
                                          : factor->as_floating_point()->get();
    if (!(f > 1.0)) fail(factor->source(), key + ": range 'factor' must be greater than 1");
  }
  const std::int64_t by = step ? std::get<std::int64_t>(scalar(*step, spec, key + " range 'step'")) : 0;
  if (step && by < 1) fail(step->source(), key + ": range 'step' must be at least 1");
  constexpr std::size_t kMaxValues = 10000;
  std::vector<Value> out;
  for (std::optional<std::int64_t> x = lo; x; x = next_in_range(*x, hi, factor, by)) {
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

// One key of [defaults] into `d`.
void read_default(const toml::key& k, const toml::node& node, const std::vector<ParamSpec>& specs, Defaults& d) {
  const std::string key(k.str());
  const auto keys = keys_of(specs);
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

// Every key of [defaults], each mistake one more line.
void parse_defaults(const toml::table& t, Defaults& d, Mistakes& mistakes) {
  const auto specs = defaults_specs();
  for (auto&& [k, node] : t) {
    // expect: the run's limits, read once the experiments are known (apply_default_limits)
    if (k.str() != "expect") mistakes.attempt([&, &k = k, &node = node] { read_default(k, node, specs, d); });
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

// An experiment's name and workload into `e`, `ctx` how messages name it: InputError where either is wrong (nothing
// else of the experiment can be read then).
const WorkloadSchema& read_head(const toml::table& t, std::size_t index, const std::vector<WorkloadSchema>& workloads,
                                Experiment& e, std::string& ctx) {
  e.name = "experiment #" + std::to_string(index + 1);
  ctx = e.name + ": ";
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
  return *schema;
}

// The experiment's modes (`m`: its key, or none: both).
void read_modes(const toml::node* m, const std::string& ctx, Experiment& e) {
  if (!m) {
    e.modes = {Mode::serial, Mode::parallel};
    return;
  }
  const ParamSpec mode_spec{"modes", ParamType::String, "", std::nullopt, 0, mode_choices()};
  for (const auto& v : convert_list(*m, mode_spec, ctx)) {
    const auto& s = std::get<std::string>(v);
    const Mode mode = *parse_mode(s);  // one of mode_choices(): convert_list checked it
    if (std::find(e.modes.begin(), e.modes.end(), mode) != e.modes.end()) {
      fail(m->source(), ctx + "mode \"" + s + "\" is listed twice");
    }
    e.modes.push_back(mode);
  }
}

// One experiment, or none where it has a mistake; each of its mistakes (unknown keys, values, limits) one more line.
std::optional<Experiment> parse_experiment(const toml::table& t, std::size_t index, const Defaults& d,
                                           const std::vector<WorkloadSchema>& workloads, Mistakes& mistakes) {
  Experiment e;
  std::string ctx;
  const WorkloadSchema* schema = nullptr;
  if (!mistakes.attempt([&] { schema = &read_head(t, index, workloads, e, ctx); })) return std::nullopt;
  const std::size_t before = mistakes.count();
  const auto valid = experiment_keys(schema);
  for (auto&& [k, node] : t) {
    const std::string key(k.str());
    if (std::find(valid.begin(), valid.end(), key) != valid.end()) continue;
    mistakes.attempt([&, &k = k] {
      fail(k.source(),
           ctx + "unknown key '" + key + "'" + did_you_mean(key, valid) + "; valid keys: " + join(valid, ", "));
    });
  }
  mistakes.attempt([&] { read_modes(t.get("modes"), ctx, e); });
  std::vector<ParamSpec> specs = common_specs(d);
  specs.insert(specs.end(), schema->params.begin(), schema->params.end());
  for (const auto& spec : specs) {
    if (auto n = t.get(spec.key)) {
      mistakes.attempt([&] { e.params.emplace_back(spec.key, convert_list(*n, spec, ctx)); });
    } else if (spec.default_value) {
      e.params.emplace_back(spec.key, std::vector<Value>{*spec.default_value});
    }
  }
  // Whether a limit can be measured depends on the modes and values: with a mistake among those, only its own.
  if (auto x = t.get("expect")) {
    const bool sound = mistakes.count() == before;
    mistakes.attempt([&] {
      if (sound) parse_expect(*x, *schema, e, ctx);
      else read_limits(*x, ctx, "[experiment.expect]");
    });
  }
  if (mistakes.count() != before) return std::nullopt;
  return e;
}

// The file as a TOML table: InputError where it is too large, nests too deep or is not TOML.
toml::table read_root(const std::string& text, const std::string& source) {
  check_config_shape(text, source);
  try {
    return toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    fail(e.source(), "TOML syntax error: " + std::string(e.description()));
  }
}

void check_top_keys(const toml::table& root, Mistakes& mistakes) {
  static const std::vector<std::string> top{"defaults", "experiment"};
  for (auto&& [k, node] : root) {
    const std::string key(k.str());
    if (std::find(top.begin(), top.end(), key) != top.end()) continue;
    mistakes.attempt([&, &k = k] {
      fail(k.source(), "unknown top-level key '" + key + "'" + did_you_mean(key, top) +
                           "; valid: [defaults] and [[experiment]] tables");
    });
  }
}

// The [[experiment]] tables: InputError where there are none.
const toml::array& experiment_list(const toml::table& root, const std::string& source) {
  const toml::node* ex = root.get("experiment");
  if (!ex) {  // a mistake of the whole file: listed after those of its lines
    throw PlacedError(source + ": no experiments: add at least one [[experiment]] table",
                      std::numeric_limits<std::uint32_t>::max(), 0);
  }
  const toml::array* arr = ex->as_array();
  if (!arr || !arr->is_array_of_tables() || arr->empty()) {
    fail(ex->source(), "'experiment' must be a list of tables: write each as [[experiment]]");
  }
  return *arr;
}

// Every experiment into cfg.experiments; those with a mistake are left out, each mistake one more line.
void parse_experiments(const toml::array& list, const std::vector<WorkloadSchema>& workloads, Config& cfg,
                       Mistakes& mistakes) {
  for (std::size_t i = 0; i < list.size(); ++i) {
    std::optional<Experiment> e = parse_experiment(*list.get(i)->as_table(), i, cfg.defaults, workloads, mistakes);
    if (!e) continue;
    const bool twice = std::any_of(cfg.experiments.begin(), cfg.experiments.end(),
                                   [&](const Experiment& other) { return other.name == e->name; });
    if (twice) {
      mistakes.attempt([&] { fail(list.get(i)->source(), "two experiments are named '" + e->name + "'"); });
    } else {
      cfg.experiments.push_back(std::move(*e));
    }
  }
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
  Mistakes mistakes(source);
  toml::table root;
  if (!mistakes.attempt([&] { root = read_root(text, source); })) mistakes.finish();  // nothing else to read
  for (const auto& o : overrides) mistakes.attempt([&] { apply_override(root, o, workloads); });
  check_top_keys(root, mistakes);
  const toml::table* defaults = root.get_as<toml::table>("defaults");
  if (const toml::node* d = root.get("defaults"); d && !defaults) {
    mistakes.attempt([&] { fail(d->source(), "'defaults' must be a table: [defaults]"); });
  }
  if (defaults) parse_defaults(*defaults, cfg.defaults, mistakes);
  const toml::array* list = nullptr;
  if (!mistakes.attempt([&] { list = &experiment_list(root, source); })) mistakes.finish();  // nothing to run
  parse_experiments(*list, workloads, cfg, mistakes);
  if (const toml::node* limits = defaults ? defaults->get("expect") : nullptr) {
    // Each limit bounds the experiments that can measure it: judged only once every one of them is read.
    const bool all_read = cfg.experiments.size() == list->size();
    mistakes.attempt([&] {
      if (all_read) apply_default_limits(*limits, workloads, cfg.experiments);
      else read_limits(*limits, "", "[defaults.expect]");
    });
  }
  mistakes.finish();
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
