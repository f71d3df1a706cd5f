// Bruck all-to-all: ceil(log2 P) rounds. The blocks are rotated into scratch so that slot i holds
// the block for rank r+i; round d = 1, 2, 4, ... sends every slot whose index has bit d set to
// r+d, packed into one message (chunked), and unpacks what r-d sends into the same slots. A block
// so travels i hops in the binary digits of i: at the end slot i holds the block from r-i, and P
// copies take the slots home. Each rank sends about (P/2) log2 P blocks against pairwise's P-1,
// but waits log2 P times against P-1: it wins for small blocks at large P (tuner/select.cc).
// Scratch: P blocks, and two of P/2 for packing; local copies: about 3P blocks' worth.
// In place comes free: only the first copies read the send buffer, only the last write recv.
#include "collectives/builders.h"

namespace coral::collectives {

Schedule alltoall_bruck(const CollArgs& a) {
  const int p = a.nranks, r = a.rank;
  const size_t n = a.count, up = static_cast<size_t>(p);
  Schedule s{"bruck", p, r, {}, n * up, n * up};
  if (p == 1 || n == 0) {
    if (!a.in_place) copy_chunked(s, {Buf::Send, 0}, {Buf::Recv, 0}, n);
    return s;
  }
  const size_t half = up / 2;  // no round sends more slots than this
  const size_t pack = up * n, unpack = pack + half * n;
  s.scratch_elems = (up + 2 * half) * n;
  auto slot = [&](size_t i) { return Ref{Buf::Scratch, i * n}; };
  copy_chunked(s, {Buf::Send, static_cast<size_t>(r) * n}, slot(0), (up - r) * n);
  copy_chunked(s, {Buf::Send, 0}, slot(up - r), static_cast<size_t>(r) * n);
  for (int d = 1; d < p; d *= 2) {
    const int to = (r + d) % p, from = (r - d + p) % p;
    std::vector<std::pair<size_t, size_t>> runs;  // [first slot, last slot) with bit d set
    for (int i = d; i < p; i += 2 * d) runs.push_back({i, std::min(i + d, p)});
    // Slots in one run (always so in the last round) travel as they lie: each chunk leaves
    // before its place takes the incoming one, as both ends cut the same run alike.
    const bool packed = runs.size() > 1;
    size_t total = 0;
    for (auto [lo, hi] : runs) {
      if (packed) copy_chunked(s, slot(lo), {Buf::Scratch, pack + total}, (hi - lo) * n);
      total += (hi - lo) * n;
    }
    const Ref out = packed ? Ref{Buf::Scratch, pack} : slot(runs[0].first);
    const Ref in = packed ? Ref{Buf::Scratch, unpack} : out;
    for (size_t lo = 0; lo < total; lo += a.chunk) {
      const size_t m = std::min(a.chunk, total - lo);
      s.steps.push_back(send(to, {out.buf, out.off + lo}, m));
      s.steps.push_back(recv(from, {in.buf, in.off + lo}, m));
    }
    if (!packed) continue;
    total = 0;
    for (auto [lo, hi] : runs) {
      copy_chunked(s, {Buf::Scratch, unpack + total}, slot(lo), (hi - lo) * n);
      total += (hi - lo) * n;
    }
  }
  for (size_t i = 0; i < up; ++i) copy_chunked(s, slot(i), {Buf::Recv, ((r + up - i) % up) * n}, n);
  return s;
}

}  // namespace coral::collectives
