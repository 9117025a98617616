// Parameter values of a case (from the config) and an ordered map of them.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace gpuscale {

using Value = std::variant<std::int64_t, double, std::string, bool>;

// Plain text of a value as a user would write it in a label ("512", "fp64").
std::string to_string(const Value& v);

// Resolved scalar parameters of one case, in declaration order.
class Params {
 public:
  void set(const std::string& key, Value v);
  bool has(const std::string& key) const;
  const Value& at(const std::string& key) const;  // throws std::out_of_range
  std::int64_t get_int(const std::string& key) const;
  const std::string& get_string(const std::string& key) const;
  double get_double(const std::string& key) const;
  bool get_bool(const std::string& key) const;
  // These parameters less `keys`, in the same order.
  Params without(const std::vector<std::string>& keys) const;

  const std::vector<std::pair<std::string, Value>>& items() const { return items_; }
  bool operator==(const Params& o) const { return items_ == o.items_; }

 private:
  std::vector<std::pair<std::string, Value>> items_;
};

}  // namespace gpuscale
