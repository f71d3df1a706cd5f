// Ring all-reduce = ring reduce-scatter + ring all-gather (composed, not duplicated).
// Steps: 2(P-1) per round of chunks. Bytes sent per rank: 2(P-1)/P * S, the lower bound.
// Wins for large messages; its 2(P-1) latency terms make it slow for small ones.
#include "collectives/builders.h"

namespace coral::collectives {

Schedule allreduce_ring(const CollArgs& a) {
  Schedule s{"ring", a.nranks, a.rank, {}, a.count, a.count};
  Blocks blocks = Blocks::even(a.count, a.nranks);
  if (a.nranks == 1) {
    copy_chunked(s, {Buf::Send, 0}, {Buf::Recv, 0}, a.count);
    return s;
  }
  Ref mine{Buf::Recv, blocks.off[a.rank]};
  ring_reduce_scatter(s, a, blocks, mine, a.op == coralAvg);
  ring_allgather(s, a, blocks);
  return s;
}

}  // namespace coral::collectives
