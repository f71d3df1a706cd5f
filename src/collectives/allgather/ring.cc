// Ring all-gather: copy own block into place, then P-1 steps per round forwarding blocks along
// the ring. Each rank sends (P-1)/P of the output.
#include "collectives/builders.h"

namespace coral::collectives {

Schedule allgather_ring(const CollArgs& a) {
  Schedule s{"ring", a.nranks, a.rank, {}, a.count, a.count * a.nranks};
  Blocks blocks = Blocks::uniform(a.count, a.nranks);
  copy_chunked(s, {Buf::Send, 0}, {Buf::Recv, blocks.off[a.rank]}, a.count);
  ring_allgather(s, a, blocks);
  return s;
}

}  // namespace coral::collectives
