// Pairwise all-to-all and all-to-all-v: P-1 rounds; in round k rank r sends its block for r+k and
// receives the block of r-k, chunk by chunk with each send followed by its receive, so every
// round is a ring shift by k in which no link holds more than kMinInFlight unread chunks. The own
// block is a local copy. Each rank sends all of its buffer but its own block, (P-1)/P of it, the
// least any schedule can, and waits P-1 times: it wins from a few hundred bytes per peer up
// (Bruck's log2 P rounds take small blocks, tuner/select.cc).
// In place (one buffer): the block from r-k lands where r's block for r-k sits, which leaves only
// in round P-k. Blocks that arrive first (k < P-k) wait in scratch, under half the buffer, and
// move home once their place is sent; the others land in place. Where an all-to-all-v's send
// and receive layouts differ, every block waits in scratch and all move home at the end.
// What travels does not depend on in_place, so ranks may differ in it.
// Empty messages are skipped: both ends see one count (r's sendcount for j is j's recvcount for
// r), so both skip alike.
#include "base/error.h"
#include "collectives/builders.h"

namespace coral::collectives {

namespace {

void pairwise(Schedule& s, const CollArgs& a, const Blocks& snd, const Blocks& rcv) {
  const int p = a.nranks, r = a.rank;
  if (snd.size[r] != rcv.size[r])
    fail(coralInvalidArgument, "all-to-all: a rank's count for itself differs from its count from itself");
  s.send_elems = snd.end();
  s.recv_elems = rcv.end();
  bool same = true;  // one layout for both sides: a block's place is also what it sends
  for (int j = 0; j < p; ++j) same = same && snd.off[j] == rcv.off[j] && snd.size[j] == rcv.size[j];
  const bool in_place = a.in_place;
  // Round k's block (k = 0: our own) waits in scratch.
  auto staged = [&](int k) { return in_place && (!same || (k > 0 && k < p - k)); };
  std::vector<size_t> slot(p, 0);  // in rank order (the last copies below rely on it)
  for (int j = 0; j < p; ++j)
    if (staged((r - j + p) % p)) {
      slot[j] = s.scratch_elems;
      s.scratch_elems += rcv.size[j];
    }
  auto home = [&](int j) { copy_chunked(s, {Buf::Scratch, slot[j]}, {Buf::Recv, rcv.off[j]}, rcv.size[j]); };
  if (!in_place) copy_chunked(s, {Buf::Send, snd.off[r]}, {Buf::Recv, rcv.off[r]}, snd.size[r]);
  if (staged(0)) copy_chunked(s, {Buf::Send, snd.off[r]}, {Buf::Scratch, slot[r]}, snd.size[r]);
  for (int k = 1; k < p; ++k) {
    const int to = (r + k) % p, from = (r - k + p) % p;
    const size_t ns = snd.size[to], nr = rcv.size[from];
    const Ref dst = staged(k) ? Ref{Buf::Scratch, slot[from]} : Ref{Buf::Recv, rcv.off[from]};
    for (size_t lo = 0; lo < std::max(ns, nr); lo += a.chunk) {
      if (lo < ns) s.steps.push_back(send(to, {Buf::Send, snd.off[to] + lo}, std::min(a.chunk, ns - lo), !in_place));
      if (lo < nr) s.steps.push_back(recv(from, {dst.buf, dst.off + lo}, std::min(a.chunk, nr - lo)));
    }
    // The block that came in round P-k from `to` can go where we just sent `to` its block.
    if (in_place && same && staged(p - k)) home(to);
  }
  if (in_place && !same) {
    // Slots run in rank order: neighbours whose places touch move in one copy.
    for (int j = 0; j < p;) {
      int e = j + 1;
      while (e < p && rcv.off[e] == rcv.off[e - 1] + rcv.size[e - 1]) ++e;
      size_t n = rcv.off[e - 1] + rcv.size[e - 1] - rcv.off[j];
      copy_chunked(s, {Buf::Scratch, slot[j]}, {Buf::Recv, rcv.off[j]}, n);
      j = e;
    }
  }
}

}  // namespace

Schedule alltoall_pairwise(const CollArgs& a) {
  Schedule s{"pairwise", a.nranks, a.rank, {}, 0, 0};
  const Blocks b = Blocks::uniform(a.count, a.nranks);
  pairwise(s, a, b, b);
  return s;
}

Schedule alltoallv_pairwise(const CollArgs& a) {
  Schedule s{"pairwise", a.nranks, a.rank, {}, 0, 0};
  const VCounts& v = vcounts_of(a, true);
  pairwise(s, a, {v.send_displs, v.send_counts}, {v.recv_displs, v.recv_counts});
  return s;
}

}  // namespace coral::collectives
