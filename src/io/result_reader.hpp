// Reads a result file back into a RunRecord (no MPI needed).
#pragma once

#include <string>

#include "io/result_model.hpp"

namespace gpuscale {

// Throws InputError when the file is missing or not a gpuscale result file,
// RuntimeError when it is damaged.
RunRecord read_result_file(const std::string& path);

}  // namespace gpuscale
