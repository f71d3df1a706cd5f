// Recursive halving / doubling over a power-of-two group (patterns::FoldedGroup folds the rest):
// the vector is cut into one "group block" per group member; halving leaves member nr holding the
// reduced group block nr, doubling spreads every group block to every member.
#pragma once
#include "collectives/builders.h"
#include "collectives/patterns/ring.h"

namespace coral::collectives {

// Elements [off of block lo, end of block hi-1).
struct Span {
  size_t off, n;
};
Span blocks_span(const Blocks& b, int lo, int hi);

// One pairwise exchange, chunk by chunk, send and receive interleaved so that two partners
// never have more than one unread message each. Receives reduce into dst (reduce: src (op) in)
// or copy there.
void exchange(Schedule& s, const CollArgs& a, int peer, Ref send, size_t nsend, bool stable, Ref recv_src, Ref dst,
              size_t nrecv, bool reduce);

// Recursive halving reduce-scatter: `in` holds the vector (in gb's layout) and stays unwritten;
// partial sums go to `work` (same layout, may be `in`). Member nr ends with group block nr
// complete in work.
void halving_reduce_scatter(Schedule& s, const CollArgs& a, const patterns::FoldedGroup& g, int nr, const Blocks& gb,
                            Ref in, Ref work);
// Recursive doubling all-gather in place in buf: member nr starts with group block nr.
void doubling_allgather(Schedule& s, const CollArgs& a, const patterns::FoldedGroup& g, int nr, const Blocks& gb,
                        Ref buf);
// Group blocks of a FoldedGroup over per-rank blocks: member nr owns the blocks of the real
// ranks it stands for (2nr and 2nr+1 for folded pairs), which are adjacent.
Blocks group_blocks(const patterns::FoldedGroup& g, const Blocks& per_rank);

}  // namespace coral::collectives
