// Recursive-doubling all-gather: log2(P) exchanges of a doubling window; each rank sends
// S (P-1)/P (S = the gathered size) and waits log2(P) times, against P-1 for the ring.
// Non-power-of-two P: the even rank of each of the first rem pairs gives its block to the odd
// one first (+S/P) and receives the whole result last (+S). Wins small and medium messages.
#include "collectives/builders.h"
#include "collectives/patterns/recursive.h"

namespace coral::collectives {

Schedule allgather_rhd(const CollArgs& a) {
  const int p = a.nranks, r = a.rank;
  const size_t n = a.count, total = n * p;
  Schedule s{"rhd", p, r, {}, n, total};
  const Blocks per_rank = Blocks::uniform(n, p);
  const Ref recv{Buf::Recv, 0};
  copy_chunked(s, {Buf::Send, 0}, {Buf::Recv, per_rank.off[r]}, n);
  if (p == 1) return s;
  patterns::FoldedGroup g(p);
  const int nr = g.new_rank(r);
  const bool folded = r < 2 * g.rem;
  if (folded && nr < 0) {
    exchange(s, a, r + 1, {Buf::Recv, per_rank.off[r]}, n, false, {}, {}, 0, false);  // rewritten below
    exchange(s, a, r + 1, {}, 0, false, {}, recv, total, false);
    return s;
  }
  if (folded) exchange(s, a, r - 1, {}, 0, false, {}, {Buf::Recv, per_rank.off[r - 1]}, n, false);
  doubling_allgather(s, a, g, nr, group_blocks(g, per_rank), recv);
  if (folded) exchange(s, a, r - 1, recv, total, true, {}, {}, 0, false);
  return s;
}

}  // namespace coral::collectives
