// Two-shot all-reduce: a direct reduce-scatter (each rank sends block b straight to rank b,
// which folds the P contributions in rank order) followed by a direct all-gather (rank b sends
// its finished block to everyone), chunk by chunk. Bytes sent per rank: 2(P-1)/P * S, like the
// ring, but with 2 rounds of waiting instead of 2(P-1). Wins where every pair of ranks is
// equally close (one host's shared memory), above all when ranks outnumber cores.
#include "collectives/builders.h"

namespace coral::collectives {

Schedule allreduce_twoshot(const CollArgs& a) {
  const int p = a.nranks, r = a.rank;
  Schedule s{"twoshot", p, r, {}, a.count, a.count};
  const Blocks blk = Blocks::even(a.count, p);
  if (p == 1) {
    copy_chunked(s, {Buf::Send, 0}, {Buf::Recv, 0}, a.count);
    return s;
  }
  s.scratch_elems = std::min(a.chunk, blk.size[r]);
  auto piece = [&](int b, size_t lo) { return blk.size[b] > lo ? std::min(a.chunk, blk.size[b] - lo) : size_t(0); };
  for (size_t lo = 0; lo < blk.size[0]; lo += a.chunk) {  // block 0 is the largest
    for (int k = 1; k < p; ++k) {
      int to = (r + k) % p;
      // Apart from the receive buffer the send buffer is never written, so the peer may read
      // it in place (cross-memory attach, or a mapping of registered memory).
      if (size_t n = piece(to, lo))
        s.steps.push_back(collectives::send(to, {Buf::Send, blk.off[to] + lo}, n, !a.in_place));
    }
    if (size_t n = piece(r, lo)) {
      const Ref mine{Buf::Send, blk.off[r] + lo}, acc{Buf::Recv, blk.off[r] + lo};
      fold_in_rank_order(s, p, r, mine, acc, {Buf::Scratch, 0}, n);
      if (a.op == coralAvg) s.steps.push_back(collectives::scale(acc, n));
      for (int k = 1; k < p; ++k) s.steps.push_back(collectives::send((r + k) % p, acc, n, true));
    }
    for (int k = 1; k < p; ++k) {
      int from = (r - k + p) % p;
      if (size_t n = piece(from, lo)) s.steps.push_back(collectives::recv(from, {Buf::Recv, blk.off[from] + lo}, n));
    }
  }
  return s;
}

}  // namespace coral::collectives
