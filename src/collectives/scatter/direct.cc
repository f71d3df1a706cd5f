// Direct scatter: the root sends block j to rank j, chunked, in rank order. One hop; the root
// sends (P-1) blocks in P-1 messages (per chunk), every other rank receives one block. It moves
// the least and wins unless the root's per-message cost dominates: small blocks at many ranks,
// where the binomial tree's log2 P messages from the root win.
// In place: the root's recv is its own block of send, already in place.
#include "collectives/builders.h"

namespace coral::collectives {

Schedule scatter_direct(const CollArgs& a) {
  const int p = a.nranks, r = a.rank;
  const size_t n = a.count;
  const bool root = r == a.root;
  Schedule s{"direct", p, r, {}, root ? n * p : 0, n};
  if (!root) {
    for (size_t lo = 0; lo < n; lo += a.chunk)
      s.steps.push_back(recv(a.root, {Buf::Recv, lo}, std::min(a.chunk, n - lo)));
    return s;
  }
  if (!a.in_place) copy_chunked(s, {Buf::Send, static_cast<size_t>(r) * n}, {Buf::Recv, 0}, n);
  for (int q = 0; q < p; ++q)
    if (q != r)
      for (size_t lo = 0; lo < n; lo += a.chunk)
        s.steps.push_back(send(q, {Buf::Send, static_cast<size_t>(q) * n + lo}, std::min(a.chunk, n - lo), true));
  return s;
}

}  // namespace coral::collectives
