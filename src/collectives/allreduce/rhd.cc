// Rabenseifner all-reduce: recursive-halving reduce-scatter, then recursive-doubling all-gather
// (patterns/recursive.h). Non-power-of-two P: the first 2*rem ranks fold in pairs before (the
// even one hands its vector to the odd one) and get the result after. Steps 2 log2(P) (+2 when
// folded); bytes sent per rank 2 S (P-1)/P (+S folded). Between recursive doubling (small S) and
// the ring (large S on many ranks): ring bandwidth with log-P latency.
// Every rank ends with identical bits: each group block is finished by one member, then copied.
#include "collectives/builders.h"
#include "collectives/patterns/recursive.h"

namespace coral::collectives {

Schedule allreduce_rhd(const CollArgs& a) {
  Schedule s{"rhd", a.nranks, a.rank, {}, a.count, a.count};
  const int r = a.rank;
  const Ref send{Buf::Send, 0}, recv{Buf::Recv, 0};
  patterns::FoldedGroup g(a.nranks);
  const int nr = g.new_rank(r);
  const bool folded = r < 2 * g.rem;
  if (folded && nr < 0) {                                           // hand the vector over, wait for the result
    exchange(s, a, r + 1, send, a.count, false, {}, {}, 0, false);  // in place, recv overwrites it
    exchange(s, a, r + 1, {}, 0, false, {}, recv, a.count, false);
    return s;
  }
  Ref in = send;
  if (folded) {  // take the partner's vector: recv <- partner (op) mine
    exchange(s, a, r - 1, {}, 0, false, send, recv, a.count, true);
    in = recv;
  }
  const Blocks gb = Blocks::even(a.count, g.pof2);
  if (g.pof2 == 1) copy_chunked(s, in, recv, a.count);
  halving_reduce_scatter(s, a, g, nr, gb, in, recv);
  if (a.op == coralAvg && a.nranks > 1 && gb.size[nr] > 0)
    s.steps.push_back(collectives::scale({Buf::Recv, gb.off[nr]}, gb.size[nr]));
  doubling_allgather(s, a, g, nr, gb, recv);
  if (folded) exchange(s, a, r - 1, recv, a.count, true, {}, {}, 0, false);
  return s;
}

}  // namespace coral::collectives
