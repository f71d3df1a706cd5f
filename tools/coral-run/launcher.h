// coral-run's process supervision: start N ranks, relay their output, stop everyone when one
// fails. Kept apart from argument parsing so it reads as one idea.
#pragma once
#include <string>
#include <vector>

namespace coral::run {

struct Options {
  int nranks = 1;
  bool prefix = true;
  double timeout_s = 0;  // 0: none
  std::vector<std::string> command;
};

// Returns the exit status coral-run should exit with.
int launch(const Options& opt);

}  // namespace coral::run
