// The model as a small human-readable JSON file (gpuscale model -o FILE):
// the files and cases it came from, and every fitted term. Keys: docs/model.md.
#pragma once

#include <string>

#include "model/model.hpp"

namespace gpuscale {

std::string model_json(const Model& m);
// InputError "PATH: ..." when the file cannot be read or is not a gpuscale model: its format word and version
// first, then every value's type and range (one line naming the key: "PATH: transfers[2].coef[1]: ...").
Model read_model_file(const std::string& path);
// The same for the file's text; `path` names it in messages.
Model read_model_json(const std::string& text, const std::string& path);
// True when the file at `path` starts as JSON does ('{' or '[') or holds nothing but blanks, so `predict` can
// tell a model (which its reader checks, and says what else it is) from result files.
bool looks_like_json(const std::string& path);
// InputError "PATH: not a gpuscale result file (it looks like report --format json output); USE" where a result
// file (HDF5) was wanted and `path` looks like JSON: what the JSON is, by its keys, rather than "not an HDF5 file".
void refuse_json_for_results(const std::string& path, const std::string& use);

}  // namespace gpuscale
