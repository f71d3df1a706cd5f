// Binomial-tree broadcast, pipelined by chunks: ceil(log2 P) hops from the root to the last
// rank, and each rank forwards each chunk to its children (up to log2 P of them, the largest
// subtree first). Inner ranks send S per child; latency log P instead of the chain's P-1, so it
// wins small and medium messages; the chain wins large ones (every rank sends S once).
#include "collectives/builders.h"
#include "collectives/patterns/binomial.h"

namespace coral::collectives {

Schedule broadcast_tree(const CollArgs& a) {
  const int p = a.nranks, r = a.rank;
  Schedule s{"tree", p, r, {}, a.count, a.count};
  const patterns::Binomial t(r, a.root, p);
  const bool root = r == a.root;
  if (root) copy_chunked(s, {Buf::Send, 0}, {Buf::Recv, 0}, a.count);
  for (size_t lo = 0; lo < a.count; lo += a.chunk) {
    const size_t n = std::min(a.chunk, a.count - lo);
    const Ref from{root ? Buf::Send : Buf::Recv, lo};
    if (!root) s.steps.push_back(collectives::recv(t.parent, {Buf::Recv, lo}, n));
    for (int c : t.children) s.steps.push_back(collectives::send(c, from, n, true));
  }
  return s;
}

}  // namespace coral::collectives
