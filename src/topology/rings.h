// Using the model: the order of ranks in a ring, the shape of an inter-host tree, which NIC each
// rank uses, and the link classes the tuner prices.
#pragma once
#include <vector>

#include "topology/model.h"

namespace coral::topology {

// A rank and the device it drives (a GPU, or a CPU domain for host-buffer ranks).
struct RankPlace {
  int host;    // device index of its host
  int device;  // device index of its GPU or CPU
};

// Ring order (a permutation of ranks): hosts are visited one after the other, so the ring
// crosses between hosts exactly once per host; inside a host consecutive ranks are as close as
// possible (NVLink before PCIe switch before host bridge before NUMA interconnect), found exactly
// for up to 12 ranks a host and greedily beyond.
std::vector<int> ring_order(const Topology& t, const std::vector<RankPlace>& ranks);

// The NIC (a Port device) each rank should use: the closest by path class; among equally close
// ones the least loaded NIC (every NIC gets a rank before any NIC's second port does), then the
// fewest hops, then bandwidth. -1 where the host has no NIC.
std::vector<int> assign_nics(const Topology& t, const std::vector<RankPlace>& ranks);

// One host's part of the ring, for ranks all on that host: the order they take (indices into
// ranks; a cycle when the host is alone, else an open path the network closes) and each one's
// NIC. Hosts are alike in a job more often than not: a plan made once serves every host.
// ring_order and assign_nics are this, per host.
struct HostPlan {
  std::vector<int> order;
  std::vector<int> nic;
};
HostPlan plan_host(const Topology& t, const std::vector<RankPlace>& ranks, bool alone);

// A binary tree over hosts for inter-host traffic: per host, the rank closest to a NIC leads;
// parent[i] is the parent rank of rank i in the tree of leaders (-1 for the root and for
// non-leaders, which reach their leader inside the host).
struct HostTree {
  std::vector<int> leaders;  // one rank per host, in host order
  std::vector<int> parent;   // per rank
};
HostTree host_tree(const Topology& t, const std::vector<RankPlace>& ranks);

// The tuner's view: a link class per rank pair and its bandwidth.
struct LinkClass {
  Path path;
  double bw;  // GB/s
};
LinkClass link_class(const Topology& t, const RankPlace& a, const RankPlace& b);

// Places for n ranks spread round-robin over the GPUs of each host (or its CPU domains when it
// has no GPU), ranks_per_host ranks a host in host order.
std::vector<RankPlace> default_places(const Topology& t, int ranks_per_host);

}  // namespace coral::topology
