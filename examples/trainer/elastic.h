// Surviving a lost worker (--elastic): when a collective fails because ranks died, the survivors
// agree on who is gone, shrink the communicator to themselves and go on from their replicas.
#pragma once
#include <coral/coral.hpp>

#include <vector>

namespace trainer {

// Replaces comm by a communicator of the survivors. `world` maps comm's ranks to the job's first
// ranks and is updated; returns the lost ones (as first ranks). Rethrows `why` when no peer is
// known to be dead after a few seconds (a timeout, a mismatch): only deaths are survived.
std::vector<int> shrink_to_survivors(coral::communicator& comm, std::vector<int>& world, const coral::error& why);

// --fail-at-step (tests): this process dies as kill -9 would kill it.
[[noreturn]] void die_now();

}  // namespace trainer
