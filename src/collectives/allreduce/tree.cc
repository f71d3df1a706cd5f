// Double binary tree all-reduce: the vector is split in two halves, each reduced up one of two
// complementary binary trees (patterns/dbtree.h) and broadcast back down it, pipelined by chunks.
// The two directions overlap: a rank sends chunk k up, then takes chunk k - lag down, so the
// down phase streams while later chunks still go up, instead of starting after the last one.
// The overlap is partial: one step order per rank means each cycle still waits for the parent's
// down message, sent after the parent's own up step, so a cycle costs about a round trip
// through the tree (the simulator: small chunks are slow, tests/unit/test_tuner.cc). Full
// overlap needs the two directions as separate step streams (NCCL splits its warps for it).
// 2 log2(P) hops of latency; each rank sends about 2S (3S/2 as an inner node of one tree, S/2
// as a leaf of the other), against 2S (P-1)/P for the ring, with logarithmic instead of linear
// latency: it wins mid-size messages on many ranks (NCCL's choice between 64 KiB and a few MiB
// at scale).
// The roots compute each element once and broadcast it: every rank ends with the same bits.
#include "collectives/builders.h"
#include "collectives/patterns/dbtree.h"

namespace coral::collectives {

namespace {

struct Half {
  patterns::TreeNode node;
  size_t off, n;
};

void up(Schedule& s, const Half& h, size_t lo, size_t n, bool avg) {
  const Ref mine{Buf::Send, h.off + lo}, acc{Buf::Recv, h.off + lo};
  Ref have = mine;
  for (int c : h.node.children) {
    s.steps.push_back(collectives::recv_reduce(c, have, acc, n));
    have = acc;
  }
  if (h.node.parent >= 0) {
    s.steps.push_back(collectives::send(h.node.parent, have, n));
  } else {
    if (h.node.children.empty()) s.steps.push_back(collectives::copy(mine, acc, n));
    if (avg) s.steps.push_back(collectives::scale(acc, n));
  }
}

void down(Schedule& s, const Half& h, size_t lo, size_t n) {
  const Ref acc{Buf::Recv, h.off + lo};
  if (h.node.parent >= 0) s.steps.push_back(collectives::recv(h.node.parent, acc, n));
  for (int c : h.node.children) s.steps.push_back(collectives::send(c, acc, n, true));
}

}  // namespace

Schedule allreduce_tree(const CollArgs& a) {
  const int p = a.nranks, r = a.rank;
  Schedule s{"tree", p, r, {}, a.count, a.count};
  if (p == 1) {
    copy_chunked(s, {Buf::Send, 0}, {Buf::Recv, 0}, a.count);
    return s;
  }
  const size_t first = a.count / 2;
  const Half h[2] = {{patterns::dbtree_node(r, p, 0), 0, first},
                     {patterns::dbtree_node(r, p, 1), first, a.count - first}};
  const bool avg = a.op == coralAvg;
  const size_t chunks = (h[1].n + a.chunk - 1) / a.chunk;
  // One lag for all ranks: two ranks that are parent and child in one tree and child and parent
  // in the other send both directions over one link, in the same order as the other reads them.
  size_t lag = 0;  // 2 x floor(log2 P), at least twice either tree's height
  for (int q = p; q > 1; q /= 2) lag += 2;
  for (size_t k = 0; k < chunks + lag; ++k) {
    if (k < chunks)
      for (const Half& x : h)
        if (k * a.chunk < x.n) up(s, x, k * a.chunk, std::min(a.chunk, x.n - k * a.chunk), avg);
    if (k >= lag)
      for (const Half& x : h) {
        const size_t lo = (k - lag) * a.chunk;
        if (lo < x.n) down(s, x, lo, std::min(a.chunk, x.n - lo));
      }
  }
  return s;
}

}  // namespace coral::collectives
