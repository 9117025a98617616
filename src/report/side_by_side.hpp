// Several runs of one config side by side (report FILE FILE...): each case,
// by name, parameters and mode, with its median in every file, and its
// speedup over the first file's serial run of it. One command of study.sh
// then shows serial, one server and across servers in one table.
#pragma once

#include <string>
#include <vector>

#include "report/report.hpp"

namespace gpuscale {

struct RunRows {
  std::string path;
  int ranks = 0, nodes = 0;
  std::vector<ReportRow> rows;
};

// "" with fewer than 2 runs, or when no case appears in two of them.
std::string render_side_by_side(const std::vector<RunRows>& runs);

}  // namespace gpuscale
