// A model file's values read the way a config's are: each one's type and range
// checked before predict divides by it or adds it up, and every failure one
// InputError naming the file and the key path ("model.json:
// transfers[2].busbw_intra_gbps: must be a number above 0, got -3").
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/value.hpp"

namespace gpuscale {

using ModelJson = nlohmann::ordered_json;  // keys in the order written: a case's parameters keep theirs

// A JSON value as a message quotes it: -3, "sideways", true, null, a list, an object.
std::string json_value_text(const ModelJson& j);

// One value of a model file and where it sits; each reader checks what the model needs of it.
class ModelField {
 public:
  // `j` and `file` outlive the field and those it hands out.
  ModelField(const ModelJson& j, const std::string& file, std::string key);

  ModelField operator[](const char* key) const;  // a key of an object, which must be there
  bool has(const char* key) const;               // an object with that key (keys added to format 2 since)
  // The keys and values of an object, in their order.
  std::vector<std::pair<std::string, ModelField>> entries() const;
  // The elements of a list of exactly `size` (0: any size) and at least `min`.
  std::vector<ModelField> list(std::size_t size = 0, std::size_t min = 0) const;
  std::string str() const;   // a string
  std::string text() const;  // a string without control characters: a name the terminal shows
  std::string word(const std::vector<std::string>& choices) const;
  double number() const;              // finite (JSON holds no other)
  double above(double lo) const;      // a number above lo: rates, sizes
  double at_least(double lo) const;   // a number of lo or more: spreads, sizes
  double between(double lo, double hi) const;
  double seconds() const;             // a time: from 0 to 30 days, as any duration a config takes
  double giga() const;                // GFLOP/s or GB/s as per second: above 0, and finite once times 1e9
  int whole(int lo) const;            // an integer from lo to INT_MAX: counts
  bool flag() const;                  // true or false
  bool null() const { return j_.is_null(); }
  const ModelJson& json() const { return j_; }
  const std::string& key() const { return key_; }
  [[noreturn]] void fail(const std::string& what) const;  // InputError "FILE: KEY: what"

 private:
  const ModelJson& j_;
  const std::string& file_;
  std::string key_;
};

// A case's workload and parameters, checked as a config checks them: a workload this version knows, then each
// parameter one of its keys with the type, range and choices the key takes; keys left out take their defaults.
std::string case_workload(const ModelField& workload);
Params case_params(const ModelField& params, const std::string& workload);

}  // namespace gpuscale
