// A case's parameters as a JSON object: numbers as numbers, booleans as
// booleans, strings as strings. Json: nlohmann::json (keys sorted, as the
// report's rows have them) or nlohmann::ordered_json (keys in the case's order).
#pragma once

#include <variant>

#include "core/value.hpp"

namespace gpuscale {

template <class Json>
Json params_json(const Params& p) {
  Json o = Json::object();
  for (const auto& [k, v] : p.items()) {
    std::visit([&o, &key = k](const auto& x) { o[key] = x; }, v);
  }
  return o;
}

}  // namespace gpuscale
