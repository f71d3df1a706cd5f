// Recursive-halving reduce-scatter: log2(P) exchanges, each of half the remaining data, so each
// rank sends S (P-1)/P (S = P blocks) like the ring but waits log2(P) times instead of P-1.
// Non-power-of-two P folds the first 2*rem ranks in pairs (the even one sends its whole input,
// +S) and the odd one hands the even one its finished block at the end. Wins small and medium
// messages on many ranks.
#include "collectives/builders.h"
#include "collectives/patterns/recursive.h"

namespace coral::collectives {

Schedule reduce_scatter_rhd(const CollArgs& a) {
  const int p = a.nranks, r = a.rank;
  const size_t rc = a.count, total = rc * p;
  Schedule s{"rhd", p, r, {}, total, rc, p > 1 ? total : 0};
  const Ref send{Buf::Send, 0}, recv{Buf::Recv, 0}, work{Buf::Scratch, 0};
  const Blocks per_rank = Blocks::uniform(rc, p);
  patterns::FoldedGroup g(p);
  const int nr = g.new_rank(r);
  const bool folded = r < 2 * g.rem;
  if (p == 1) {
    copy_chunked(s, send, recv, rc);
    return s;
  }
  if (folded && nr < 0) {
    exchange(s, a, r + 1, send, total, false, {}, {}, 0, false);  // in place, recv overlaps it
    exchange(s, a, r + 1, {}, 0, false, {}, recv, rc, false);
    return s;
  }
  Ref in = send;
  if (folded) {
    exchange(s, a, r - 1, {}, 0, false, send, work, total, true);
    in = work;
  }
  const Blocks gb = group_blocks(g, per_rank);
  halving_reduce_scatter(s, a, g, nr, gb, in, work);
  // Group block nr holds our block, and the folded partner's before it.
  if (a.op == coralAvg && gb.size[nr]) s.steps.push_back(collectives::scale({Buf::Scratch, gb.off[nr]}, gb.size[nr]));
  if (folded) exchange(s, a, r - 1, {Buf::Scratch, per_rank.off[r - 1]}, rc, true, {}, {}, 0, false);
  copy_chunked(s, {Buf::Scratch, per_rank.off[r]}, recv, rc);
  return s;
}

}  // namespace coral::collectives
