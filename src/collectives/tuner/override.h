// The user's override of the tuner (CORAL_ALGO): one algorithm name for every collective that
// has it, or per-collective size ranges, e.g.
//   allreduce:0-4K:oneshot,4K-1M:rhd,1M-:ring;broadcast:0-64K:tree
// Sizes are bytes with optional K, M, G (binary) suffixes; "lo-" is open-ended. Ranges of one
// collective must not overlap; sizes outside every range are left to the tuner.
#pragma once
#include <string>
#include <vector>

#include "collectives/registry.h"

namespace coral::sched {

struct SizeRule {
  Coll coll;
  size_t lo, hi;  // bytes, [lo, hi)
  Algo algo;
};

struct Overrides {
  Algo all = Algo::Auto;
  std::vector<SizeRule> rules;
};

// Throws coral::Error(coralInvalidArgument) naming the offending part.
Overrides parse_overrides(const std::string& text);
// Bytes the size ranges compare against (nccl-tests' "size": the whole buffer for RS and AG).
size_t message_bytes(const CollArgs& a);

}  // namespace coral::sched
