// coral-run's process supervision: start N ranks, relay their output, stop everyone when one
// fails. Kept apart from argument parsing so it reads as one idea.
#pragma once
#include <string>
#include <vector>

#include "tools/coral-run/bind.h"

namespace coral::run {

struct Options {
  int nranks = 1;  // on this node
  // Multi-node: node 0's coral-run serves the store at root; every node starts its own ranks.
  int nnodes = 1;
  int node_rank = 0;
  std::string root;    // host:port, required when nnodes > 1
  std::string secret;  // hex, the same on every node (CORAL_SECRET)
  bool prefix = true;
  double timeout_s = 0;     // 0: none
  bool keep_going = false;  // a dead rank does not stop the others
  Bind bind = Bind::Auto;
  std::vector<std::string> command;
};

// Returns the exit status coral-run should exit with.
int launch(const Options& opt);

}  // namespace coral::run
