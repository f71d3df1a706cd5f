// Closed-form alpha-beta costs of the all-reduce algorithms across hosts, the tuner's cost
// model (the simulator checks them: tests/unit/test_tuner.cc). Ranks are placed host by
// host, ranks_per_host to a host; a message between ranks at distance >= ranks_per_host
// crosses hosts.
#pragma once
#include <cstddef>

namespace coral::collectives {

struct LinkModel {
  double alpha;  // seconds per message
  double beta;   // seconds per byte
};

struct ClusterModel {
  int nranks, ranks_per_host;
  LinkModel intra, inter;
  // Ranks of a host that share one NIC: where every rank of a host crosses at once (recursive
  // doubling and halving-doubling at host distance, the hierarchical shards), they split it.
  int nic_share = 1;
};

double cost_ring(const ClusterModel& m, double bytes);
double cost_rd(const ClusterModel& m, double bytes);
double cost_rhd(const ClusterModel& m, double bytes);
double cost_hier(const ClusterModel& m, double bytes);

}  // namespace coral::collectives
