// Binomial-tree reduce to the root, pipelined by chunks: each rank folds its children's partial
// results into its own (smallest subtree first, as they finish first) and passes the sum up.
// ceil(log2 P) hops; every rank sends S once. Wins small and medium messages over the chain's
// P-1 hops.
#include "collectives/builders.h"
#include "collectives/patterns/binomial.h"

namespace coral::collectives {

Schedule reduce_tree(const CollArgs& a) {
  const int p = a.nranks, r = a.rank;
  const bool root = r == a.root;
  const patterns::Binomial t(r, a.root, p);
  const bool inner = !t.children.empty();
  Schedule s{"tree", p, r, {}, a.count, root ? a.count : 0, !root && inner ? a.count : 0};
  const Buf acc = root ? Buf::Recv : Buf::Scratch;
  for (size_t lo = 0; lo < a.count; lo += a.chunk) {
    const size_t n = std::min(a.chunk, a.count - lo);
    Ref have{Buf::Send, lo};
    for (auto c = t.children.rbegin(); c != t.children.rend(); ++c) {
      s.steps.push_back(collectives::recv_reduce(*c, have, {acc, lo}, n));
      have = {acc, lo};
    }
    if (root) {
      if (!inner) copy_chunked(s, have, {Buf::Recv, lo}, n);
      if (a.op == coralAvg && p > 1) s.steps.push_back(collectives::scale({Buf::Recv, lo}, n));
    } else {
      s.steps.push_back(collectives::send(t.parent, have, n, !inner));
    }
  }
  return s;
}

}  // namespace coral::collectives
