// Chooses the algorithm for one call: a pure function of the call and the tuning parameters.
#pragma once
#include "collectives/registry.h"
#include "collectives/tuner/cost.h"
#include "collectives/tuner/override.h"

namespace coral::sched {

struct TuneParams {
  Algo forced = Algo::Auto;  // CORAL_ALGO as one name
  std::vector<SizeRule> rules;  // CORAL_ALGO as size ranges (they win over `forced`)
  size_t small_bytes = 4096;  // CORAL_SMALL_BYTES: latency path up to here
  size_t mid_bytes = 1 << 20;  // log-latency algorithms (rhd, trees) up to here
  int oneshot_max_ranks = 8;   // one-shot's P-1 messages per rank only pay off for few ranks
  bool single_host = false;    // every rank shares memory with every other
  int hosts = 1;               // distinct hosts among the ranks
  // Link classes for the cost model across hosts: defaults for a host's shared memory and a
  // 100 Gb/s-class network (alpha seconds, beta seconds per byte).
  LinkModel intra{1e-6, 1 / 20e9}, inter{5e-6, 1 / 12.5e9};
  int nic_share = 1;  // ranks of a host behind one NIC (see ClusterModel)
};

Algo select_algo(const CollArgs& a, const TuneParams& t);

}  // namespace coral::sched
