// Ring all-gather-v: the ring all-gather over uneven blocks (recv_counts at recv_displs). P-1
// steps per round of chunks; each rank sends every block but its successor's once, S - S_next
// (S = the sum of the counts). Rounds follow the largest block: ranks with small blocks idle
// in the later rounds, so very uneven counts take as long as P blocks of the largest.
// In place: the send buffer is our own block of recv, already in place.
#include "collectives/builders.h"

namespace coral::collectives {

Schedule allgatherv_ring(const CollArgs& a) {
  const VCounts& v = vcounts_of(a, false);
  const Blocks blocks{v.recv_displs, v.recv_counts};
  const size_t mine = blocks.size[a.rank];
  Schedule s{"ring", a.nranks, a.rank, {}, mine, blocks.end()};
  if (!a.in_place) copy_chunked(s, {Buf::Send, 0}, {Buf::Recv, blocks.off[a.rank]}, mine);
  ring_allgather(s, a, blocks);
  return s;
}

}  // namespace coral::collectives
