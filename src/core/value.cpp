#include "core/value.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace gpuscale {

std::string to_string(const Value& v) {
  struct Visitor {
    std::string operator()(std::int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const {
      std::ostringstream os;
      os << d;
      return os.str();
    }
    std::string operator()(const std::string& s) const { return s; }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
  };
  return std::visit(Visitor{}, v);
}

void Params::set(const std::string& key, Value v) {
  auto it = std::find_if(items_.begin(), items_.end(), [&](const auto& kv) { return kv.first == key; });
  if (it != items_.end()) {
    it->second = std::move(v);
  } else {
    items_.emplace_back(key, std::move(v));
  }
}

Params Params::without(const std::vector<std::string>& keys) const {
  Params out;
  for (const auto& kv : items_) {
    if (std::find(keys.begin(), keys.end(), kv.first) == keys.end()) out.items_.push_back(kv);
  }
  return out;
}

bool Params::has(const std::string& key) const {
  return std::any_of(items_.begin(), items_.end(), [&](const auto& kv) { return kv.first == key; });
}

const Value& Params::at(const std::string& key) const {
  for (const auto& kv : items_) {
    if (kv.first == key) return kv.second;
  }
  throw std::out_of_range("no parameter '" + key + "'");
}

std::int64_t Params::get_int(const std::string& key) const { return std::get<std::int64_t>(at(key)); }

const std::string& Params::get_string(const std::string& key) const { return std::get<std::string>(at(key)); }

double Params::get_double(const std::string& key) const { return std::get<double>(at(key)); }

bool Params::get_bool(const std::string& key) const { return std::get<bool>(at(key)); }

}  // namespace gpuscale
