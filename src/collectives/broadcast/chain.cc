// Pipelined chain broadcast: root -> root+1 -> ... ; chunks stream so every link is busy.
// Time ~ (P-1 + chunks) chunk transfers: good for large messages; log-depth trees win small ones.
#include "collectives/builders.h"

namespace coral::collectives {

Schedule broadcast_chain(const CollArgs& a) {
  const int p = a.nranks, r = a.rank;
  Schedule s{"chain", p, r, {}, a.count, a.count};
  const int pos = (r - a.root + p) % p, next = (r + 1) % p, prev = (r + p - 1) % p;
  if (pos == 0) copy_chunked(s, {Buf::Send, 0}, {Buf::Recv, 0}, a.count);
  if (p == 1) return s;
  for (size_t lo = 0; lo < a.count; lo += a.chunk) {
    const size_t n = std::min(a.chunk, a.count - lo);
    if (pos == 0)
      s.steps.push_back(collectives::send(next, {Buf::Send, lo}, n, true));
    else if (pos < p - 1)
      s.steps.push_back(collectives::recv_copy_send(prev, next, {Buf::Recv, lo}, n));
    else
      s.steps.push_back(collectives::recv(prev, {Buf::Recv, lo}, n));
  }
  return s;
}

}  // namespace coral::collectives
