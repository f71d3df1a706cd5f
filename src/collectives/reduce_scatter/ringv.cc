// Ring reduce-scatter-v: the ring reduce-scatter over uneven blocks (recv_counts, back to back
// in the send buffer). P-1 steps per round of chunks; each rank sends every block but its own
// once, S - S_own (S = the sum of the counts). Rounds follow the largest block, as the
// all-gather-v's. In place: recv is our own block of send, and the ring writes it only where
// its last step has read it.
#include "collectives/builders.h"

namespace coral::collectives {

Schedule reduce_scatterv_ring(const CollArgs& a) {
  const VCounts& v = vcounts_of(a, false);
  const Blocks blocks = Blocks::packed(v.recv_counts);
  const size_t mine = blocks.size[a.rank];
  Schedule s{"ring", a.nranks, a.rank, {}, blocks.end(), mine};
  if (a.nranks == 1) {
    if (!a.in_place) copy_chunked(s, {Buf::Send, 0}, {Buf::Recv, 0}, mine);
    return s;
  }
  ring_reduce_scatter(s, a, blocks, {Buf::Recv, 0}, a.op == coralAvg);
  return s;
}

}  // namespace coral::collectives
