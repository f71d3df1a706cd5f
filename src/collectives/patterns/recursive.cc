#include "collectives/patterns/recursive.h"

namespace coral::collectives {

Span blocks_span(const Blocks& b, int lo, int hi) {
  size_t off = b.off[lo];
  return {off, b.off[hi - 1] + b.size[hi - 1] - off};
}

static Ref at(Ref r, size_t d) { return {r.buf, r.off + d}; }

void exchange(Schedule& s, const CollArgs& a, int peer, Ref send, size_t nsend, bool stable, Ref recv_src, Ref dst,
              size_t nrecv, bool reduce) {
  for (size_t lo = 0; lo < std::max(nsend, nrecv); lo += a.chunk) {
    if (lo < nsend) s.steps.push_back(collectives::send(peer, at(send, lo), std::min(a.chunk, nsend - lo), stable));
    if (lo < nrecv) {
      size_t n = std::min(a.chunk, nrecv - lo);
      if (reduce)
        s.steps.push_back(collectives::recv_reduce(peer, at(recv_src, lo), at(dst, lo), n));
      else
        s.steps.push_back(collectives::recv(peer, at(dst, lo), n));
    }
  }
}

void halving_reduce_scatter(Schedule& s, const CollArgs& a, const patterns::FoldedGroup& g, int nr, const Blocks& gb,
                            Ref in, Ref work) {
  int lo = 0, hi = g.pof2;
  Ref cur = in;
  for (int mask = g.pof2 / 2; mask >= 1; mask /= 2) {
    int mid = lo + (hi - lo) / 2;
    bool upper = nr & mask;
    Span give = upper ? blocks_span(gb, lo, mid) : blocks_span(gb, mid, hi);
    Span keep = upper ? blocks_span(gb, mid, hi) : blocks_span(gb, lo, mid);
    exchange(s, a, g.real_rank(nr ^ mask), at(cur, give.off), give.n, false, at(cur, keep.off), at(work, keep.off),
             keep.n, true);
    (upper ? lo : hi) = mid;
    cur = work;
  }
}

void doubling_allgather(Schedule& s, const CollArgs& a, const patterns::FoldedGroup& g, int nr, const Blocks& gb,
                        Ref buf) {
  for (int mask = 1; mask < g.pof2; mask *= 2) {
    int lo = nr & ~(mask - 1), plo = (nr ^ mask) & ~(mask - 1);
    Span mine = blocks_span(gb, lo, lo + mask), theirs = blocks_span(gb, plo, plo + mask);
    exchange(s, a, g.real_rank(nr ^ mask), at(buf, mine.off), mine.n, true, {}, at(buf, theirs.off), theirs.n, false);
  }
}

Blocks group_blocks(const patterns::FoldedGroup& g, const Blocks& per_rank) {
  Blocks gb;
  for (int nr = 0; nr < g.pof2; nr++) {
    int first = nr < g.rem ? 2 * nr : nr + g.rem, last = g.real_rank(nr);
    gb.off.push_back(per_rank.off[first]);
    gb.size.push_back(per_rank.off[last] + per_rank.size[last] - per_rank.off[first]);
  }
  return gb;
}

}  // namespace coral::collectives
