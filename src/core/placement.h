// Topology driving the communicator: where each rank sits (its GPU or NUMA domain), the ring
// order that follows the cheapest paths, the NIC each rank uses, and what the tuner should
// assume of the network. One rank per host (the lowest, its leader) loads the host's model
// (CORAL_TOPO_FILE, or detection), plans its ranks with topology::plan_host (the code path
// coral-topo shows) and publishes the plan; every rank reads the leaders' plans.
#pragma once
#include <sched.h>

#include <string>
#include <vector>

#include "bootstrap/exchange.h"

namespace coral {

struct Placement {
  std::vector<int> ring;               // ranks in ring order (hosts in turn)
  std::vector<std::string> device;     // per rank: the device's id in its host's model
  std::vector<std::string> nic, rdma;  // per rank: interface and RDMA port, "" for none
  std::vector<std::string> port;       // per rank: the NIC port's id in the model, as coral-topo names it
  std::vector<int> numa;               // per rank: NUMA node, -1 when unknown
  double nic_gbs = 0;                  // the slowest chosen physical NIC, GB/s; 0 unknown
  bool identity() const;               // the ring is rank order
  std::string describe() const;        // for TOPO logs: ring, NICs, groups
};

// What each rank tells its leader: its CPU affinity (for its NUMA domain).
struct PlaceInput {
  cpu_set_t cpus;
};

// Collective over the communicator's ranks, after the peer records: host_index[r] numbers r's
// host (by first appearance), inputs[r] is what rank r published. Throws coralInvalidArgument
// for a bad CORAL_TOPO_FILE or CORAL_TOPO_DEVICES (on that host's leader; the others then time
// out naming it, as with any rank that fails at init).
Placement place_ranks(bootstrap::Exchange& ex, int rank, const std::vector<int>& host_index,
                      const std::vector<PlaceInput>& inputs);

}  // namespace coral
