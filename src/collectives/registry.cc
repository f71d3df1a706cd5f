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
  }
  return "?";
}

Algo parse_algo(const std::string& name) {
  for (Algo a : {Algo::Auto, Algo::Ring, Algo::Tree, Algo::Rhd, Algo::RecursiveDoubling, Algo::OneShot, Algo::Hier,
                 Algo::TwoShot, Algo::Chain})
    if (name == algo_name(a)) return a;
  fail(coralInvalidArgument,
       "unknown algorithm '" + name + "' (expected auto, ring, tree, rhd, rd, oneshot, hier, twoshot, chain)");
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
    default:
      return Algo::Direct;
  }
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
  }
  fail(coralInternalError, "no builder");
}

}  // namespace coral::collectives
