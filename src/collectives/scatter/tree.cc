// Binomial-tree scatter: the root sends each child its subtree's blocks (largest subtree first,
// as it has the furthest to go); an inner rank takes its span into scratch, passes its children
// theirs and keeps its own block. ceil(log2 P) hops and as many messages (per chunk) from the
// root against the direct scatter's P-1; inner ranks forward their subtrees, so the bytes sent
// add up to about S/2 log2 P (S = P blocks) against S. Wins small blocks at many ranks, where
// messages, not bytes, cost. Not pipelined: a rank forwards once its span is in.
// In place: the root's recv is its own block of send, already in place.
#include "collectives/builders.h"
#include "collectives/patterns/binomial.h"
#include "collectives/patterns/subtree.h"

namespace coral::collectives {

Schedule scatter_tree(const CollArgs& a) {
  const int p = a.nranks, r = a.rank;
  const size_t n = a.count;
  const bool root = r == a.root;
  const int vr = (r - a.root + p) % p, size = patterns::subtree_size(vr, p);
  const patterns::Binomial t(r, a.root, p);
  Schedule s{"tree", p, r, {}, root ? n * p : 0, n};
  if (!root && t.children.empty()) {  // a leaf takes its block where it belongs
    for (const patterns::Piece& pc : patterns::span_pieces(vr, 1, a.root, p, n, a.chunk))
      s.steps.push_back(recv(t.parent, {Buf::Recv, pc.off}, pc.n));
    return s;
  }
  if (!root) {
    s.scratch_elems = static_cast<size_t>(size) * n;
    for (const patterns::Piece& pc : patterns::span_pieces(vr, size, a.root, p, n, a.chunk))
      s.steps.push_back(recv(t.parent, {Buf::Scratch, pc.off}, pc.n));
  }
  for (int c : t.children) {
    const int vc = (c - a.root + p) % p;
    const size_t at = static_cast<size_t>(vc - vr) * n;
    for (const patterns::Piece& pc : patterns::span_pieces(vc, patterns::subtree_size(vc, p), a.root, p, n, a.chunk))
      s.steps.push_back(root ? send(c, {Buf::Send, pc.real}, pc.n, true) : send(c, {Buf::Scratch, at + pc.off}, pc.n));
  }
  if (!root)
    copy_chunked(s, {Buf::Scratch, 0}, {Buf::Recv, 0}, n);
  else if (!a.in_place)
    copy_chunked(s, {Buf::Send, static_cast<size_t>(r) * n}, {Buf::Recv, 0}, n);
  return s;
}

}  // namespace coral::collectives
