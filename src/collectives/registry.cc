#include "collectives/registry.h"

#include "base/error.h"
#include "collectives/builders.h"

namespace coral::collectives {

const char* algo_name(Algo a) {
  switch (a) {
    case Algo::Auto:
      return "auto";
    case Algo::Ring:
      return "ring";
    case Algo::RecursiveDoubling:
      return "rd";
    case Algo::OneShot:
      return "oneshot";
    case Algo::TwoShot:
      return "twoshot";
    case Algo::Chain:
      return "chain";
    case Algo::Dissemination:
      return "dissemination";
    case Algo::Direct:
      return "direct";
    case Algo::Rhd:
      return "rhd";
    case Algo::Tree:
      return "tree";
    case Algo::Hier:
      return "hier";
    case Algo::Pairwise:
      return "pairwise";
    case Algo::Bruck:
      return "bruck";
  }
  return "?";
}

Algo parse_algo(const std::string& name) {
  for (Algo a : {Algo::Auto, Algo::Ring, Algo::Tree, Algo::Rhd, Algo::RecursiveDoubling, Algo::OneShot, Algo::Hier,
                 Algo::TwoShot, Algo::Chain, Algo::Direct, Algo::Pairwise, Algo::Bruck})
    if (name == algo_name(a)) return a;
  fail(coralInvalidArgument, "unknown algorithm '" + name +
                                 "' (expected auto, ring, tree, rhd, rd, oneshot, hier, twoshot, chain, direct, "
                                 "pairwise, bruck)");
}

bool supports(Coll coll, Algo algo) {
  switch (coll) {
    case Coll::AllReduce:
      return algo == Algo::Ring || algo == Algo::RecursiveDoubling || algo == Algo::OneShot || algo == Algo::TwoShot ||
             algo == Algo::Rhd || algo == Algo::Tree || algo == Algo::Hier;
    case Coll::ReduceScatter:
    case Coll::AllGather:
      return algo == Algo::Ring || algo == Algo::Rhd;
    case Coll::Broadcast:
    case Coll::Reduce:
      return algo == Algo::Chain || algo == Algo::Tree;
    case Coll::Barrier:
      return algo == Algo::Dissemination;
    case Coll::Send:
    case Coll::Recv:
      return algo == Algo::Direct;
    case Coll::AllToAll:
      return algo == Algo::Pairwise || algo == Algo::Bruck;
    case Coll::AllToAllv:
      // One algorithm only: ranks know only their own counts, so no size could pick alike.
      return algo == Algo::Pairwise;
    case Coll::Gather:
    case Coll::Scatter:
      return algo == Algo::Direct || algo == Algo::Tree;
    case Coll::AllGatherv:
    case Coll::ReduceScatterv:
      return algo == Algo::Ring;
  }
  return false;
}

Algo default_algo(Coll coll) {
  switch (coll) {
    case Coll::AllReduce:
    case Coll::ReduceScatter:
    case Coll::AllGather:
      return Algo::Ring;
    case Coll::Broadcast:
    case Coll::Reduce:
      return Algo::Chain;
    case Coll::Barrier:
      return Algo::Dissemination;
    case Coll::AllToAll:
    case Coll::AllToAllv:
      return Algo::Pairwise;
    case Coll::AllGatherv:
    case Coll::ReduceScatterv:
      return Algo::Ring;
    case Coll::Send:
    case Coll::Recv:
    case Coll::Gather:
    case Coll::Scatter:
      return Algo::Direct;
  }
  return Algo::Direct;
}

Schedule build(const CollArgs& a, Algo algo) {
  if (a.chunk == 0) fail(coralInternalError, "schedule chunk size is zero");
  switch (a.coll) {
    case Coll::AllReduce:
      if (algo == Algo::RecursiveDoubling) return allreduce_rd(a);
      if (algo == Algo::OneShot) return allreduce_oneshot(a);
      if (algo == Algo::TwoShot) return allreduce_twoshot(a);
      if (algo == Algo::Rhd) return allreduce_rhd(a);
      if (algo == Algo::Tree) return allreduce_tree(a);
      if (algo == Algo::Hier) return allreduce_hier(a);
      return allreduce_ring(a);
    case Coll::ReduceScatter:
      return algo == Algo::Rhd ? reduce_scatter_rhd(a) : reduce_scatter_ring(a);
    case Coll::AllGather:
      return algo == Algo::Rhd ? allgather_rhd(a) : allgather_ring(a);
    case Coll::Broadcast:
      return algo == Algo::Tree ? broadcast_tree(a) : broadcast_chain(a);
    case Coll::Reduce:
      return algo == Algo::Tree ? reduce_tree(a) : reduce_chain(a);
    case Coll::Barrier:
      return barrier_dissemination(a);
    case Coll::Send:
    case Coll::Recv:
      return sendrecv_p2p(a);
    case Coll::AllToAll:
      return algo == Algo::Bruck ? alltoall_bruck(a) : alltoall_pairwise(a);
    case Coll::AllToAllv:
      return alltoallv_pairwise(a);
    case Coll::Gather:
      return algo == Algo::Tree ? gather_tree(a) : gather_direct(a);
    case Coll::Scatter:
      return algo == Algo::Tree ? scatter_tree(a) : scatter_direct(a);
    case Coll::AllGatherv:
      return allgatherv_ring(a);
    case Coll::ReduceScatterv:
      return reduce_scatterv_ring(a);
  }
  fail(coralInternalError, "no builder");
}

}  // namespace coral::collectives
