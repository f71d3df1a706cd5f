// Double binary tree all-reduce: the vector is split in two halves, each reduced up one of two
// complementary binary trees (patterns/dbtree.h) and broadcast back down it, pipelined by chunks.
// 2 log2(P) hops of latency; each rank sends about S (a leaf in one tree, inner in the other),
// against 2S (P-1)/P for the ring, with logarithmic instead of linear latency: it wins
// mid-size messages on many ranks (NCCL's choice between 64 KiB and a few MiB at scale).
// The roots compute each element once and broadcast it: every rank ends with the same bits.
#include "collectives/builders.h"
#include "collectives/patterns/dbtree.h"

namespace coral::sched {

namespace {

struct Half {
  patterns::TreeNode node;
  size_t off, n;
};

void up(Schedule& s, const Half& h, size_t lo, size_t n, bool avg) {
  const Ref mine{Buf::Send, h.off + lo}, acc{Buf::Recv, h.off + lo};
  Ref have = mine;
  for (int c : h.node.children) {
    s.steps.push_back({OpKind::RecvReduce, c, -1, have, acc, n});
    have = acc;
  }
  if (h.node.parent >= 0) {
    s.steps.push_back({OpKind::Send, h.node.parent, -1, have, {}, n});
  } else {
    if (h.node.children.empty()) s.steps.push_back({OpKind::Copy, -1, -1, mine, acc, n});
    if (avg) s.steps.push_back({OpKind::Scale, -1, -1, {}, acc, n});
  }
}

void down(Schedule& s, const Half& h, size_t lo, size_t n) {
  const Ref acc{Buf::Recv, h.off + lo};
  if (h.node.parent >= 0) s.steps.push_back({OpKind::Recv, h.node.parent, -1, {}, acc, n});
  for (int c : h.node.children) s.steps.push_back({OpKind::Send, c, -1, acc, {}, n, {}, true});
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
  const Half h[2] = {{patterns::dbtree_node(r, p, 0), 0, first}, {patterns::dbtree_node(r, p, 1), first, a.count - first}};
  const bool avg = a.op == coralAvg;
  // Up both trees chunk by chunk, then down both: each phase pipelines along its tree.
  for (size_t lo = 0; lo < h[1].n; lo += a.chunk)
    for (const Half& x : h)
      if (lo < x.n) up(s, x, lo, std::min(a.chunk, x.n - lo), avg);
  for (size_t lo = 0; lo < h[1].n; lo += a.chunk)
    for (const Half& x : h)
      if (lo < x.n) down(s, x, lo, std::min(a.chunk, x.n - lo));
  return s;
}

}  // namespace coral::sched
