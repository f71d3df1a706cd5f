// Human views of the model for coral-topo: an nvidia-smi-style matrix, an indented tree, DOT.
#pragma once
#include <string>

#include "topology/model.h"

namespace coral::topology {

std::string render_matrix(const Topology& t);
std::string render_tree(const Topology& t);
std::string render_dot(const Topology& t);
// A short census: counts of each kind and link type, of `copies` hosts like t.
std::string render_summary(const Topology& t, int copies = 1);

}  // namespace coral::topology
