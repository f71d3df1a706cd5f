// Maps (collective, algorithm) to its builder.
#pragma once
#include <string>

#include "collectives/schedule.h"

namespace coral::collectives {

enum class Algo {
  Auto,
  Ring,
  RecursiveDoubling,
  OneShot,
  TwoShot,
  Chain,
  Dissemination,
  Direct,
  Rhd,
  Tree,
  Hier,
  Pairwise,
  Bruck,
};

const char* algo_name(Algo a);
// Throws coralInvalidArgument naming the accepted values.
Algo parse_algo(const std::string& name);
// Algorithms that can build coll; the first is the default.
bool supports(Coll coll, Algo algo);
Algo default_algo(Coll coll);
// algo must not be Auto (the tuner resolves it).
Schedule build(const CollArgs& args, Algo algo);

}  // namespace coral::collectives
