// The model as a small human-readable JSON file (gpuscale model -o FILE):
// the files and cases it came from, and every fitted term. Keys: docs/model.md.
#pragma once

#include <string>

#include "model/model.hpp"

namespace gpuscale {

std::string model_json(const Model& m);
// InputError "PATH: ..." when the file cannot be read or is not a gpuscale model.
Model read_model_file(const std::string& path);
// True when the file at `path` starts as JSON does ('{'), so `predict` can tell a model from result files.
bool looks_like_json(const std::string& path);

}  // namespace gpuscale
