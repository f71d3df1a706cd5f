// The user's override of the tuner (CORAL_ALGO): one algorithm name for every collective that
// has it, or per-collective size ranges, e.g.
//   allreduce:0-4K:oneshot,4K-1M:rhd,1M-:ring;broadcast:0-64K:tree
// Sizes are bytes with optional K, M, G (binary) suffixes; "lo-" is open-ended. Ranges of one
// collective must not overlap; sizes outside every range are left to the tuner.
#pragma once
#include <string>
#include <vector>

#include "collectives/registry.h"

namespace coral::collectives {

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
// The other way: rules as a CORAL_ALGO value that parse_overrides reads back as the same rules, each
// collective's ranges in their order, sizes with the largest of G, M, K that divides them; "" for none.
std::string format_rules(const std::vector<SizeRule>& rules);
// The one name when there are no rules ("auto" for none at all), else format_rules.
std::string format_overrides(const Overrides& o);
// Bytes the size ranges compare against (nccl-tests' "size": the whole buffer for RS, AG, their
// v-forms and all-to-all, the root's buffer for gather and scatter; all-to-all-v: this rank's
// receive, a.count).
size_t message_bytes(const CollArgs& a);

}  // namespace coral::collectives
