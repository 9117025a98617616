// The scopes a transfer runs in (comm/groups.hpp makes their groups): names and which group a rank is in, with no
// MPI, so that the result file's model and its readers know them too.
#pragma once

#include <string>
#include <vector>

namespace gpuscale {

enum class Scope { world, intra_node, inter_node, node_pairs };
Scope parse_scope(const std::string& s);  // throws std::invalid_argument
const char* scope_name(Scope s);
// The scopes in which every rank takes part: world, intra-node, inter-node (node-pairs is the collective's own).
const std::vector<std::string>& scope_names();

// Which group a rank belongs to in a scope: 0..groups-1, numbered in order
// of their lowest rank (world: 0; intra-node: the node index; inter-node: the
// local rank; node-pairs: 0 for local rank 0, -1 (outside) for the others).
int scope_group_index(Scope s, int node_index, int local_rank);

}  // namespace gpuscale
