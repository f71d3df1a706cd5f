// Binomial-tree gather: each rank collects its subtree's blocks (children smallest subtree first,
// as they finish first) into scratch behind its own and sends the lot to its parent; the root
// takes its children's spans straight into recv. ceil(log2 P) hops and as many messages (per
// chunk) at the root against the direct gather's P-1; inner ranks forward their subtrees, so the
// bytes sent add up to about S/2 log2 P (S = P blocks) against S. Wins small blocks at many
// ranks, where messages, not bytes, cost. Not pipelined: a span leaves once it is complete.
// In place: the root's block is already in its place in recv.
#include "collectives/builders.h"
#include "collectives/patterns/binomial.h"
#include "collectives/patterns/subtree.h"

namespace coral::collectives {

Schedule gather_tree(const CollArgs& a) {
  const int p = a.nranks, r = a.rank;
  const size_t n = a.count;
  const bool root = r == a.root;
  const int vr = (r - a.root + p) % p, size = patterns::subtree_size(vr, p);
  const patterns::Binomial t(r, a.root, p);
  Schedule s{"tree", p, r, {}, n, root ? n * p : 0};
  if (root && !a.in_place) copy_chunked(s, {Buf::Send, 0}, {Buf::Recv, static_cast<size_t>(r) * n}, n);
  if (!root && t.children.empty()) {  // a leaf sends its block as it is
    for (const patterns::Piece& pc : patterns::span_pieces(vr, 1, a.root, p, n, a.chunk))
      s.steps.push_back(send(t.parent, {Buf::Send, pc.off}, pc.n, true));
    return s;
  }
  if (!root) {
    s.scratch_elems = static_cast<size_t>(size) * n;
    copy_chunked(s, {Buf::Send, 0}, {Buf::Scratch, 0}, n);
  }
  for (auto c = t.children.rbegin(); c != t.children.rend(); ++c) {
    const int vc = (*c - a.root + p) % p;
    const size_t at = static_cast<size_t>(vc - vr) * n;
    for (const patterns::Piece& pc : patterns::span_pieces(vc, patterns::subtree_size(vc, p), a.root, p, n, a.chunk))
      s.steps.push_back(recv(*c, root ? Ref{Buf::Recv, pc.real} : Ref{Buf::Scratch, at + pc.off}, pc.n));
  }
  if (!root)
    for (const patterns::Piece& pc : patterns::span_pieces(vr, size, a.root, p, n, a.chunk))
      s.steps.push_back(send(t.parent, {Buf::Scratch, pc.off}, pc.n));
  return s;
}

}  // namespace coral::collectives
