// Reusable schedule fragments.
// Ring reduce-scatter and all-gather, chunked into rounds of at most a.chunk elements per block.
// Reduce-scatter: P-1 steps per round, each rank sends (P-1)/P of the data; the partial sums
// travel the ring and are never written locally (recv_reduce_send). All-gather: the same ring
// carrying finished blocks. Bandwidth-optimal; latency grows with P.
// The rank-order fold used by the direct (one-shot, two-shot) algorithms.
#include <algorithm>

#include "base/error.h"
#include "collectives/builders.h"
#include "collectives/patterns/ring.h"

namespace coral::collectives {

Blocks Blocks::even(size_t n, int p) {
  Blocks b;
  for (int i = 0; i < p; ++i) {
    b.off.push_back(block_offset(n, p, i));
    b.size.push_back(block_size(n, p, i));
  }
  return b;
}

Blocks Blocks::uniform(size_t per_block, int p) {
  Blocks b;
  for (int i = 0; i < p; ++i) {
    b.off.push_back(per_block * i);
    b.size.push_back(per_block);
  }
  return b;
}

Blocks Blocks::packed(const std::vector<size_t>& sizes) {
  Blocks b;
  size_t at = 0;
  for (size_t n : sizes) {
    b.off.push_back(at);
    b.size.push_back(n);
    at += n;
  }
  return b;
}

size_t Blocks::end() const {
  size_t e = 0;
  for (size_t i = 0; i < off.size(); ++i) e = std::max(e, size[i] ? off[i] + size[i] : 0);
  return e;
}

const VCounts& vcounts_of(const CollArgs& a, bool need_send) {
  const size_t p = static_cast<size_t>(a.nranks);
  const VCounts* v = a.v.get();
  if (!v) fail(coralInvalidArgument, std::string(coll_name(a.coll)) + ": no counts");
  bool ok = v->recv_counts.size() == p && (a.coll == Coll::ReduceScatterv || v->recv_displs.size() == p);
  if (need_send) ok = ok && v->send_counts.size() == p && v->send_displs.size() == p;
  if (!ok) fail(coralInvalidArgument, std::string(coll_name(a.coll)) + ": counts and displacements need one per rank");
  return *v;
}

static size_t rounds(const Blocks& b, size_t chunk) {
  size_t biggest = 0;
  for (size_t s : b.size) biggest = std::max(biggest, s);
  return (biggest + chunk - 1) / chunk;
}

// Elements of block b in round k.
static size_t piece(const Blocks& b, int blk, size_t k, size_t chunk) {
  size_t lo = k * chunk;
  return b.size[blk] > lo ? std::min(chunk, b.size[blk] - lo) : 0;
}

namespace {

// A rank's place in the ring a.order describes (rank order without one): its neighbours, and
// the rank whose block sits k positions behind it, so that block b still ends on rank b.
struct RingPlace {
  int pos, next, prev;
  const std::vector<int>* order;
  RingPlace(const CollArgs& a) : order(a.order) {
    const int p = a.nranks;
    pos = a.rank;
    if (order) pos = static_cast<int>(std::find(order->begin(), order->end(), a.rank) - order->begin());
    next = at(patterns::ring_next(pos, p)), prev = at(patterns::ring_prev(pos, p));
  }
  int at(int position) const { return order ? (*order)[static_cast<size_t>(position)] : position; }
  int behind(int k, int p) const { return at(patterns::ring_back(pos, k, p)); }
};

}  // namespace

void ring_reduce_scatter(Schedule& s, const CollArgs& a, const Blocks& in, Ref out_mine, bool scale) {
  const int p = a.nranks;
  if (p == 1) return;
  const RingPlace ring(a);
  const int next = ring.next, prev = ring.prev;
  for (size_t k = 0, nk = rounds(in, a.chunk); k < nk; ++k) {
    const size_t lo = k * a.chunk;
    for (int st = 0; st < p; ++st) {
      int blk = ring.behind(st + 1, p);
      size_t n = piece(in, blk, k, a.chunk);
      if (n == 0) continue;
      Ref src{Buf::Send, in.off[blk] + lo};
      if (st == 0) {
        s.steps.push_back(collectives::send(next, src, n));
      } else if (st < p - 1) {
        s.steps.push_back(collectives::recv_reduce_send(prev, next, src, n));
      } else {
        Ref dst{out_mine.buf, out_mine.off + lo};
        s.steps.push_back(collectives::recv_reduce(prev, src, dst, n));
        if (scale) s.steps.push_back(collectives::scale(dst, n));
      }
    }
  }
}

void ring_allgather(Schedule& s, const CollArgs& a, const Blocks& blocks) {
  const int p = a.nranks;
  if (p == 1) return;
  const RingPlace ring(a);
  const int next = ring.next, prev = ring.prev;
  for (size_t k = 0, nk = rounds(blocks, a.chunk); k < nk; ++k) {
    const size_t lo = k * a.chunk;
    for (int st = 0; st < p; ++st) {
      int blk = ring.behind(st, p);
      size_t n = piece(blocks, blk, k, a.chunk);
      if (n == 0) continue;
      Ref ref{Buf::Recv, blocks.off[blk] + lo};
      if (st == 0)
        s.steps.push_back(collectives::send(next, ref, n, true));
      else if (st < p - 1)
        s.steps.push_back(collectives::recv_copy_send(prev, next, ref, n));
      else
        s.steps.push_back(collectives::recv(prev, ref, n));
    }
  }
}

void fold_in_rank_order(Schedule& s, int p, int r, Ref mine, Ref acc, Ref scratch, size_t n, bool posted) {
  if (p == 1) return copy_chunked(s, mine, acc, n);
  const size_t first = s.steps.size();
  int q = 2;
  if (r <= 1) {
    // x_0 (op) x_1 in one pass straight into acc (the kernel's operands commute exactly).
    s.steps.push_back(collectives::recv_reduce(1 - r, mine, acc, n));
  } else {
    // Ranks before us are folded in scratch: acc may alias our input, needed at our turn.
    s.steps.push_back(collectives::recv(0, scratch, n));
    for (q = 1; q < r; ++q) s.steps.push_back(collectives::recv_reduce(q, scratch, scratch, n));
    s.steps.push_back(collectives::reduce(scratch, mine, acc, n));
    q = r + 1;
  }
  for (; q < p; ++q) s.steps.push_back(collectives::recv_reduce(q, acc, acc, n));
  for (size_t i = first; i < s.steps.size(); ++i) s.steps[i].posted = posted && s.steps[i].peer >= 0;
}

void copy_chunked(Schedule& s, Ref src, Ref dst, size_t count) {
  if (count > 0) s.steps.push_back(collectives::copy(src, dst, count));
}

}  // namespace coral::collectives
