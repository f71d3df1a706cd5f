// Alpha-beta timing of a collective's schedules: every message costs alpha (latency) plus
// bytes * beta (1 / bandwidth) of its link class (inside a host, or between hosts); each rank's
// outgoing and incoming traffic per link class is serialised (one NIC, one memory link); local
// copies and reductions cost gamma per byte. It is how we reason about clusters we cannot run
// (1,024 or 8,192 ranks) and how the tuner's choices are checked.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "collectives/registry.h"

namespace coral::collectives {

struct LinkCost {
  double alpha = 0;     // seconds per message, latency (overlaps with other messages)
  double beta = 0;      // seconds per byte
  double overhead = 0;  // seconds per message the sender's port is busy (message rate limit)
};

struct Cluster {
  std::vector<int> host;  // host of each rank
  LinkCost intra, inter;
  double gamma = 0;  // seconds per byte of local copy or reduction
  static Cluster uniform(int nranks, int ranks_per_host, LinkCost intra, LinkCost inter, double gamma = 0);
};

struct SimResult {
  double seconds = 0;  // when the last rank finishes
  std::string error;   // a deadlock or malformed schedule
};

SimResult simulate(const std::vector<Schedule>& per_rank, size_t elem_bytes, const Cluster& c);
// Builds every rank's schedule for args (args.rank is ignored) and times it.
SimResult simulate(const CollArgs& args, Algo algo, const Cluster& c);
// The same from each rank's own arguments (all-to-all-v's counts differ by rank): args_of(r),
// whose rank is set to r.
SimResult simulate_ranks(const std::function<CollArgs(int rank)>& args_of, Algo algo, const Cluster& c);

// nccl-tests' bus bandwidth factor: 2(P-1)/P for all-reduce, (P-1)/P for reduce-scatter,
// all-gather (and their v-forms), all-to-all, gather and scatter, 1 for broadcast and reduce.
double bus_factor(Coll c, int nranks);

}  // namespace coral::collectives
