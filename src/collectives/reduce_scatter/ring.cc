// Ring reduce-scatter: P-1 steps per round; each rank sends (P-1)/P of its input. Rank r ends
// with block r (recvcount elements) reduced over all ranks.
#include "collectives/builders.h"

namespace coral::collectives {

Schedule reduce_scatter_ring(const CollArgs& a) {
  Schedule s{"ring", a.nranks, a.rank, {}, a.count * a.nranks, a.count};
  Blocks blocks = Blocks::uniform(a.count, a.nranks);
  if (a.nranks == 1) {
    copy_chunked(s, {Buf::Send, 0}, {Buf::Recv, 0}, a.count);
    return s;
  }
  ring_reduce_scatter(s, a, blocks, {Buf::Recv, 0}, a.op == coralAvg);
  return s;
}

}  // namespace coral::collectives
