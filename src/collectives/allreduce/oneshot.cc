// One-shot all-reduce: every rank sends its whole vector to every peer, then folds the P inputs
// in rank order (0, 1, ..., P-1), so every rank computes the same bits. One round of waiting;
// sends S(P-1) bytes per rank, as one post where the transport has posts (shared memory: the
// vector is written once and every peer reads it). Wins for tiny messages among few ranks,
// above all when ranks outnumber cores (each rank needs the core once to send and once to reduce).
#include "collectives/builders.h"

namespace coral::collectives {

Schedule allreduce_oneshot(const CollArgs& a) {
  const int p = a.nranks, r = a.rank;
  Schedule s{"oneshot", p, r, {}, a.count, a.count};
  s.scratch_elems = std::min(a.chunk, a.count);
  for (size_t lo = 0; lo < a.count; lo += a.chunk) {
    const size_t n = std::min(a.chunk, a.count - lo);
    const Ref mine{Buf::Send, lo}, acc{Buf::Recv, lo};
    for (int k = 1; k < p; ++k) {
      s.steps.push_back(collectives::send((r + k) % p, mine, n));
      s.steps.back().posted = true;
    }
    fold_in_rank_order(s, p, r, mine, acc, {Buf::Scratch, 0}, n, true);
    if (a.op == coralAvg && p > 1) s.steps.push_back(collectives::scale(acc, n));
  }
  return s;
}

}  // namespace coral::collectives
