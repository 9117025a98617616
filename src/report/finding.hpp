// A judgment a row makes about one part of the machine -- a node, a GPU (its rank) or a link between two nodes --
// that the verdict (report/verdict.hpp) folds, with the others, into one severity per part.
#pragma once

#include <string>

namespace gpuscale {

enum class Severity { pass, warn, fail };
enum class SubjectKind { node, gpu, link };

struct Finding {
  SubjectKind kind = SubjectKind::node;
  // node: its hostname; link: "host_a-host_b" (host_a, host_b below); gpu: "" (the rank names it).
  std::string subject;
  int rank = -1;  // gpu: the rank that ran on it
  std::string host_a, host_b;  // link: its two ends
  Severity severity = Severity::warn;
  std::string reason;  // "link to node1 at 24% of the best pair (...)"; the case is added by the verdict
};

}  // namespace gpuscale
