// Reads a result file back into a RunRecord (no MPI needed).
#pragma once

#include <functional>
#include <string>

#include "io/result_model.hpp"

namespace gpuscale {

// Throws InputError when the file is missing or not a gpuscale result file,
// RuntimeError when it is damaged.
RunRecord read_result_file(const std::string& path);

// The same, one case at a time: `visit` gets the run (its cases left empty)
// and each case in turn, whose samples are freed before the next is read.
// Returns the run, its cases left empty.
RunRecord read_result_file(const std::string& path,
                           const std::function<void(const RunRecord& run, CaseRecord&& c)>& visit);

}  // namespace gpuscale
