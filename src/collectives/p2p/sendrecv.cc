#include "collectives/builders.h"

namespace coral::collectives {

// Point-to-point send or receive, chunked; an empty message still travels so counts match.
Schedule sendrecv_p2p(const CollArgs& a) {
  const bool send = a.coll == Coll::Send;
  Schedule s{send ? "send" : "recv", a.nranks, a.rank, {}, send ? a.count : 0, send ? 0 : a.count};
  size_t lo = 0;
  do {
    const size_t n = std::min(a.chunk, a.count - lo);
    if (send)
      s.steps.push_back(collectives::send(a.root, {Buf::Send, lo}, n, true));
    else
      s.steps.push_back(collectives::recv(a.root, {Buf::Recv, lo}, n));
    lo += n;
  } while (lo < a.count);
  return s;
}

}  // namespace coral::collectives
