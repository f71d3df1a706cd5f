// Pipelined chain reduce toward the root: root+1 -> root+2 -> ... -> root, reducing on the way.
// Each rank sends S once; latency P-1 hops plus the pipeline fill.
#include "collectives/builders.h"

namespace coral::collectives {

Schedule reduce_chain(const CollArgs& a) {
  const int p = a.nranks, r = a.rank;
  Schedule s{"chain", p, r, {}, a.count, r == a.root ? a.count : 0};
  const int pos = (r - a.root - 1 + 2 * p) % p, next = (r + 1) % p, prev = (r + p - 1) % p;
  if (p == 1) {
    copy_chunked(s, {Buf::Send, 0}, {Buf::Recv, 0}, a.count);
    return s;
  }
  for (size_t lo = 0; lo < a.count; lo += a.chunk) {
    const size_t n = std::min(a.chunk, a.count - lo);
    Ref src{Buf::Send, lo};
    if (pos == 0) {
      s.steps.push_back(collectives::send(next, src, n));
    } else if (pos < p - 1) {
      s.steps.push_back(collectives::recv_reduce_send(prev, next, src, n));
    } else {
      s.steps.push_back(collectives::recv_reduce(prev, src, {Buf::Recv, lo}, n));
      if (a.op == coralAvg) s.steps.push_back(collectives::scale({Buf::Recv, lo}, n));
    }
  }
  return s;
}

}  // namespace coral::collectives
