// Direct gather: every rank sends its block to the root, chunked; the root takes them in rank
// order. One hop; the root receives (P-1) blocks in P-1 messages (per chunk), every other rank
// sends one block. It moves the least and wins unless the root's per-message cost dominates:
// small blocks at many ranks, where the binomial tree's log2 P messages at the root win.
// In place: the root's block is already in its place in recv.
#include "collectives/builders.h"

namespace coral::collectives {

Schedule gather_direct(const CollArgs& a) {
  const int p = a.nranks, r = a.rank;
  const size_t n = a.count;
  const bool root = r == a.root;
  Schedule s{"direct", p, r, {}, n, root ? n * p : 0};
  if (!root) {
    for (size_t lo = 0; lo < n; lo += a.chunk)
      s.steps.push_back(send(a.root, {Buf::Send, lo}, std::min(a.chunk, n - lo), true));
    return s;
  }
  if (!a.in_place) copy_chunked(s, {Buf::Send, 0}, {Buf::Recv, static_cast<size_t>(r) * n}, n);
  for (int q = 0; q < p; ++q)
    if (q != r)
      for (size_t lo = 0; lo < n; lo += a.chunk)
        s.steps.push_back(recv(q, {Buf::Recv, static_cast<size_t>(q) * n + lo}, std::min(a.chunk, n - lo)));
  return s;
}

}  // namespace coral::collectives
