#include "model/model_check.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/param_spec.hpp"
#include "core/text.hpp"
#include "workloads/workload.hpp"

namespace gpuscale {

std::string json_value_text(const ModelJson& j) {
  if (j.is_string()) {
    const std::string& s = j.get_ref<const std::string&>();
    return "\"" + printable(s.size() > 60 ? s.substr(0, 60) + "..." : s) + "\"";
  }
  if (j.is_array()) return j.empty() ? "an empty list" : "a list";
  if (j.is_object()) return "an object";
  return j.dump();  // numbers as written (JSON has no infinity or NaN), true, false, null
}

ModelField::ModelField(const ModelJson& j, const std::string& file, std::string key)
    : j_(j), file_(file), key_(std::move(key)) {}

void ModelField::fail(const std::string& what) const {
  throw InputError(file_ + ": " + (key_.empty() ? "" : key_ + ": ") + what);
}

ModelField ModelField::operator[](const char* key) const {
  if (!j_.is_object()) fail("must be an object, got " + json_value_text(j_));
  const std::string path = key_.empty() ? printable(key) : key_ + "." + printable(key);
  const auto it = j_.find(key);
  if (it == j_.end()) ModelField(j_, file_, path).fail("missing");
  return ModelField(*it, file_, path);
}

bool ModelField::has(const char* key) const { return j_.is_object() && j_.contains(key); }

std::vector<std::pair<std::string, ModelField>> ModelField::entries() const {
  if (!j_.is_object()) fail("must be an object, got " + json_value_text(j_));
  std::vector<std::pair<std::string, ModelField>> out;
  for (const auto& [k, v] : j_.items()) out.emplace_back(k, ModelField(v, file_, key_ + "." + printable(k)));
  return out;
}

std::vector<ModelField> ModelField::list(std::size_t size, std::size_t min) const {
  if (!j_.is_array()) fail("must be a list, got " + json_value_text(j_));
  if (size > 0 && j_.size() != size) {
    fail("must be a list of " + std::to_string(size) + ", got a list of " + std::to_string(j_.size()));
  }
  if (j_.size() < min) fail("must be a list of at least " + std::to_string(min) + ", got " + json_value_text(j_));
  std::vector<ModelField> out;
  out.reserve(j_.size());
  for (std::size_t i = 0; i < j_.size(); ++i) out.emplace_back(j_[i], file_, key_ + "[" + std::to_string(i) + "]");
  return out;
}

std::string ModelField::str() const {
  if (!j_.is_string()) fail("must be a string, got " + json_value_text(j_));
  return j_.get_ref<const std::string&>();
}

std::string ModelField::text() const {
  const std::string s = str();
  // Names and paths reach the terminal: no escape sequences from a file.
  if (const std::string why = text_problem(s); !why.empty()) {
    fail("must be text, got " + json_value_text(j_) + ": " + why);
  }
  return s;
}

std::string ModelField::word(const std::vector<std::string>& choices) const {
  if (!j_.is_string()) fail("must be one of " + join(choices, ", ") + "; got " + json_value_text(j_));
  const std::string& s = j_.get_ref<const std::string&>();
  if (std::find(choices.begin(), choices.end(), s) == choices.end()) {
    fail("must be one of " + join(choices, ", ") + "; got " + json_value_text(j_) + did_you_mean(s, choices));
  }
  return s;
}

double ModelField::number() const {
  if (!j_.is_number()) fail("must be a number, got " + json_value_text(j_));
  return j_.get<double>();
}

double ModelField::above(double lo) const {
  if (!j_.is_number() || !(j_.get<double>() > lo)) {
    fail("must be a number above " + format_number("%.15g", lo) + ", got " + json_value_text(j_));
  }
  return j_.get<double>();
}

double ModelField::at_least(double lo) const {
  if (!j_.is_number() || !(j_.get<double>() >= lo)) {
    fail("must be a number of at least " + format_number("%.15g", lo) + ", got " + json_value_text(j_));
  }
  return j_.get<double>();
}

double ModelField::between(double lo, double hi) const {
  if (!j_.is_number() || !(j_.get<double>() >= lo && j_.get<double>() <= hi)) {
    fail("must be a number from " + format_number("%.15g", lo) + " to " + format_number("%.15g", hi) + ", got " +
         json_value_text(j_));
  }
  return j_.get<double>();
}

double ModelField::seconds() const { return between(0, kMaxDurationS); }

double ModelField::giga() const {
  const double x = above(0);
  if (!std::isfinite(x * 1e9)) fail("must be a number above 0 and below 1e299, got " + json_value_text(j_));
  return x * 1e9;
}

int ModelField::whole(int lo) const {
  const bool integer = j_.is_number_integer() && !(j_.is_number_unsigned() && j_.get<std::uint64_t>() > INT_MAX);
  const std::int64_t v = integer ? j_.get<std::int64_t>() : 0;
  if (!integer || v < lo || v > INT_MAX) {
    fail("must be an integer from " + std::to_string(lo) + " to " + std::to_string(INT_MAX) + ", got " +
         json_value_text(j_));
  }
  return static_cast<int>(v);
}

bool ModelField::flag() const {
  if (!j_.is_boolean()) fail("must be true or false, got " + json_value_text(j_));
  return j_.get<bool>();
}

namespace {

// Each workload's keys, common ones first; built once (a model may hold many cases).
const std::map<std::string, std::vector<ParamSpec>>& specs_by_workload() {
  static const auto by = [] {
    std::map<std::string, std::vector<ParamSpec>> out;
    for (const auto& w : workload_schemas()) {
      auto& specs = out[w.name];
      specs = case_common_specs(Defaults{});
      specs.insert(specs.end(), w.params.begin(), w.params.end());
    }
    return out;
  }();
  return by;
}

std::string bound_text(double bound, ParamType t) {
  return t == ParamType::Int ? std::to_string(static_cast<long long>(bound)) : format_number("%.15g", bound);
}

void check_bounds(const ModelField& f, const ParamSpec& spec, double x) {
  if (x < spec.min || (spec.min_exclusive && x <= spec.min)) {
    f.fail(std::string(spec.min_exclusive ? "must be greater than " : "must be at least ") +
           bound_text(spec.min, spec.type) + ", got " + json_value_text(f.json()));
  }
  if (x > spec.max) f.fail("must be at most " + bound_text(spec.max, spec.type) + ", got " + json_value_text(f.json()));
}

// One parameter as the config loader converts it: the spec's type (an integer is a number too), range and choices.
Value param_value(const ModelField& f, const ParamSpec& spec) {
  const ModelJson& j = f.json();
  const std::string must = std::string("must be ") + type_name(spec.type) + ", got " + json_value_text(j);
  switch (spec.type) {
    case ParamType::Int:
      if (!j.is_number_integer() || (j.is_number_unsigned() && j.get<std::uint64_t>() > INT64_MAX)) f.fail(must);
      check_bounds(f, spec, static_cast<double>(j.get<std::int64_t>()));
      return j.get<std::int64_t>();
    case ParamType::Float:
      if (!j.is_number()) f.fail(must);
      check_bounds(f, spec, j.get<double>());
      return j.get<double>();
    case ParamType::String:
      if (!j.is_string()) f.fail(must);
      return spec.choices.empty() ? f.text() : f.word(spec.choices);
    case ParamType::Bool:
      if (!j.is_boolean()) f.fail(must);
      return j.get<bool>();
  }
  f.fail(must);
}

// A workload this version does not know is kept (predict says so for its cases); its parameters are plain values.
Params unchecked_params(const ModelField& params) {
  Params p;
  for (const auto& [k, v] : params.json().items()) {
    if (v.is_boolean()) p.set(k, v.get<bool>());
    else if (v.is_number_integer() && !(v.is_number_unsigned() && v.get<std::uint64_t>() > INT64_MAX)) {
      p.set(k, v.get<std::int64_t>());
    } else if (v.is_number()) p.set(k, v.get<double>());
    else if (v.is_string()) p.set(k, params[k.c_str()].text());
    else params[k.c_str()].fail("must be a number, a string, or true or false, got " + json_value_text(v));
  }
  return p;
}

}  // namespace

std::string case_workload(const ModelField& workload) {
  const std::string name = workload.text();
  if (name.empty()) workload.fail("must be a workload's name, got \"\"");
  return name;
}

Params case_params(const ModelField& params, const std::string& workload) {
  if (!params.json().is_object()) params.fail("must be an object, got " + json_value_text(params.json()));
  const auto& by = specs_by_workload();
  const auto specs = by.find(workload);
  if (specs == by.end()) return unchecked_params(params);
  std::vector<std::string> keys;
  for (const auto& s : specs->second) keys.push_back(s.key);
  Params p;
  for (const auto& [k, v] : params.json().items()) {
    const auto spec = std::find_if(specs->second.begin(), specs->second.end(),
                                   [&key = k](const ParamSpec& s) { return s.key == key; });
    if (spec == specs->second.end()) {
      params.fail("unknown key \"" + printable(k) + "\" for workload " + workload + did_you_mean(k, keys) +
                  "; valid keys: " + join(keys, ", "));
    }
    p.set(k, param_value(params[k.c_str()], *spec));
  }
  for (const auto& s : specs->second) {  // as the config loader: a key left out takes its default
    if (!p.has(s.key) && s.default_value) p.set(s.key, *s.default_value);
  }
  return p;
}

}  // namespace gpuscale
