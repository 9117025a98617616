#include "comm/scope.hpp"

#include <stdexcept>

namespace gpuscale {

const std::vector<std::string>& scope_names() {
  static const std::vector<std::string> v{"world", "intra-node", "inter-node"};
  return v;
}

Scope parse_scope(const std::string& s) {
  if (s == "world") return Scope::world;
  if (s == "intra-node") return Scope::intra_node;
  if (s == "inter-node") return Scope::inter_node;
  if (s == "node-pairs") return Scope::node_pairs;
  throw std::invalid_argument("unknown scope '" + s + "'");
}

const char* scope_name(Scope s) {
  switch (s) {
    case Scope::world: return "world";
    case Scope::intra_node: return "intra-node";
    case Scope::inter_node: return "inter-node";
    case Scope::node_pairs: return "node-pairs";
  }
  return "?";
}

int scope_group_index(Scope s, int node_index, int local_rank) {
  switch (s) {
    case Scope::world: return 0;
    case Scope::intra_node: return node_index;
    case Scope::inter_node: return local_rank;
    case Scope::node_pairs: return local_rank == 0 ? 0 : -1;
  }
  return 0;
}

}  // namespace gpuscale
