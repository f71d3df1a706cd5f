// Recursive doubling all-reduce: log2(P) exchanges of the whole vector with partners at distance
// 1, 2, 4...; non-power-of-two P folds the first 2*rem ranks in pairs first and hands them the
// result last. Bytes sent per rank: S log2(P). Wins for small messages (latency log P vs 2(P-1)).
// Every rank computes the same bits: each exchange combines the same two operands on both sides.
#include "collectives/builders.h"
#include "collectives/patterns/ring.h"

namespace coral::collectives {

Schedule allreduce_rd(const CollArgs& a) {
  Schedule s{"rd", a.nranks, a.rank, {}, a.count, a.count};
  const int r = a.rank;
  copy_chunked(s, {Buf::Send, 0}, {Buf::Recv, 0}, a.count);
  if (a.nranks == 1) return s;
  patterns::FoldedGroup g(a.nranks);
  const int nr = g.new_rank(r);
  for (size_t lo = 0; lo < a.count; lo += a.chunk) {
    const size_t n = std::min(a.chunk, a.count - lo);
    const Ref buf{Buf::Recv, lo};
    if (r < 2 * g.rem) {
      if (nr < 0)
        s.steps.push_back(collectives::send(r + 1, buf, n));
      else
        s.steps.push_back(collectives::recv_reduce(r - 1, buf, buf, n));
    }
    if (nr >= 0) {
      for (int mask = 1; mask < g.pof2; mask <<= 1) {
        int peer = g.real_rank(nr ^ mask);
        s.steps.push_back(collectives::send(peer, buf, n));
        s.steps.push_back(collectives::recv_reduce(peer, buf, buf, n));
      }
      if (a.op == coralAvg) s.steps.push_back(collectives::scale(buf, n));
    }
    if (r < 2 * g.rem) {
      if (nr >= 0)
        s.steps.push_back(collectives::send(r - 1, buf, n));
      else
        s.steps.push_back(collectives::recv(r + 1, buf, n));
    }
  }
  return s;
}

}  // namespace coral::collectives
