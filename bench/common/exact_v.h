// One rank's buffers for one call of any collective, with its inputs and the number of wrong
// elements in its result, from closed forms: every rank can compute every other rank's counts,
// inputs and results, so no expected value needs communicating. Shared by coral-bench's -c check
// and the test suite (tests/common/checks.h).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "bench/common/exact_values.h"

namespace exact {

// Uneven counts of the v-collectives ("skew"): block k of p (k a position, not a rank) gets a
// weight rising linearly from 1/skew to 1, scaled so the mean block stays n. skew = 1 is even;
// skew = infinity makes position 0 empty (and, rounded, more blocks for small n), which is
// how the tests get zero counts. Both sides of a call compute the same double expression, so
// they agree on every count.
inline size_t skew_count(size_t n, double skew, int k, int p) {
  if (p == 1 || skew == 1) return n;
  const double lo = 1 / skew;
  const double w = lo + (1 - lo) * k / (p - 1);
  return static_cast<size_t>(std::floor(static_cast<double>(n) * w * 2 / (1 + lo) + 0.5));
}

// All-gather-v and reduce-scatter-v: rank's block. The positions start at rank p-1, so the
// empty block is the last rank's and the largest the second last's.
inline size_t v_count(size_t n, double skew, int rank, int p) { return skew_count(n, skew, (rank + 1) % p, p); }

// All-to-all-v: src's block for dst. src + 2 dst is no symmetric form, so a rank's count to a
// peer mostly differs from the peer's count to it (a mixed-up sendcounts/recvcounts shows);
// for odd p every rank sends one empty block and receives one.
inline size_t vv_count(size_t n, double skew, int src, int dst, int p) {
  return skew_count(n, skew, (src + 2 * dst + 1) % p, p);
}

// Displacements of blocks of the given counts. Packed: back to back in rank order. Otherwise
// one element apart, in reverse rank order if asked: a block written at the wrong place or
// past its end then lands on a gap, which must stay as it was.
inline std::vector<size_t> place(const std::vector<size_t>& counts, bool packed, bool reverse) {
  const int p = static_cast<int>(counts.size());
  std::vector<size_t> d(p);
  size_t at = 0;
  for (int i = 0; i < p; ++i) {
    const int q = reverse ? p - 1 - i : i;
    d[q] = at;
    at += counts[q] + (packed ? 0 : 1);
  }
  return d;
}

struct Layout {
  Coll coll = Coll::AllReduce;
  int rank = 0, p = 1, root = 0;
  size_t n = 0;  // the call's count argument; for v-forms the nominal block
  double skew = 1;
  // v-forms, as the C API takes them: all-to-all-v all four; all-gather-v recvcounts and
  // rdispls (its displs); reduce-scatter-v recvcounts.
  std::vector<size_t> sendcounts, sdispls, recvcounts, rdispls;
  size_t send_elems = 0, recv_elems = 0;  // extents of separate send and receive buffers
  // In place: one buffer of one_elems, the send buffer at send_at, the receive buffer at
  // recv_at (NCCL's conventions, and at every rank as nccl-tests does: a non-root's gather or
  // scatter then simply passes two pointers into one buffer).
  size_t one_elems = 0, send_at = 0, recv_at = 0;
  bool is_v() const { return coll == Coll::AllToAllv || coll == Coll::AllGatherv || coll == Coll::ReduceScatterv; }
  // Elements this rank's receive block starts at in the reduce-scatter(-v) send buffer.
  size_t reduced_base() const {
    if (coll == Coll::ReduceScatter) return rank * n;
    size_t b = 0;
    for (int q = 0; q < rank && coll == Coll::ReduceScatterv; ++q) b += recvcounts[q];
    return b;
  }
  // The size nccl-tests reports, in elements: the count for all-reduce, broadcast and reduce,
  // the whole buffer (P blocks) for the others. For the v-forms the sum of the blocks, and for
  // all-to-all-v, as nccl-tests, the most any rank sends or receives: the busiest rank bounds
  // the time.
  size_t total_elems() const {
    size_t t = 0;
    if (coll == Coll::AllToAllv) {
      for (int r = 0; r < p; ++r) {
        size_t sent = 0, got = 0;
        for (int q = 0; q < p; ++q) sent += vv_count(n, skew, r, q, p), got += vv_count(n, skew, q, r, p);
        t = std::max({t, sent, got});
      }
      return t;
    }
    if (is_v()) {
      for (size_t c : recvcounts) t += c;
      return t;
    }
    return coll == Coll::AllReduce || coll == Coll::Broadcast || coll == Coll::Reduce ? n : n * p;
  }
};

inline Layout layout(Coll c, int rank, int p, int root, size_t n, double skew = 1) {
  Layout l;
  l.coll = c;
  l.rank = rank;
  l.p = p;
  l.root = root;
  l.n = n;
  l.skew = skew;
  const size_t np = n * p;
  const bool packed = skew == 1;
  switch (c) {
    case Coll::AllReduce:
    case Coll::Broadcast:
    case Coll::Reduce:
      l.send_elems = l.recv_elems = l.one_elems = n;
      break;
    case Coll::ReduceScatter:
    case Coll::Scatter:
      l.send_elems = l.one_elems = np;
      l.recv_elems = n;
      l.recv_at = rank * n;
      break;
    case Coll::AllGather:
    case Coll::Gather:
      l.recv_elems = l.one_elems = np;
      l.send_elems = n;
      l.send_at = rank * n;
      break;
    case Coll::AllToAll:
      l.send_elems = l.recv_elems = l.one_elems = np;
      break;
    case Coll::AllToAllv: {
      for (int q = 0; q < p; ++q) {
        l.sendcounts.push_back(vv_count(n, skew, rank, q, p));
        l.recvcounts.push_back(vv_count(n, skew, q, rank, p));
      }
      // Uneven layouts differ between the sides, which in place makes every block wait in scratch.
      l.sdispls = place(l.sendcounts, packed, false);
      l.rdispls = place(l.recvcounts, packed, true);
      for (int q = 0; q < p; ++q) {
        l.send_elems = std::max(l.send_elems, l.sdispls[q] + l.sendcounts[q]);
        l.recv_elems = std::max(l.recv_elems, l.rdispls[q] + l.recvcounts[q]);
      }
      l.one_elems = std::max(l.send_elems, l.recv_elems);
      break;
    }
    case Coll::AllGatherv:
      for (int q = 0; q < p; ++q) l.recvcounts.push_back(v_count(n, skew, q, p));
      l.rdispls = place(l.recvcounts, packed, true);
      l.send_elems = l.recvcounts[rank];
      for (int q = 0; q < p; ++q) l.recv_elems = std::max(l.recv_elems, l.rdispls[q] + l.recvcounts[q]);
      l.one_elems = l.recv_elems;
      l.send_at = l.rdispls[rank];
      break;
    case Coll::ReduceScatterv:
      for (int q = 0; q < p; ++q) l.recvcounts.push_back(v_count(n, skew, q, p));
      for (size_t x : l.recvcounts) l.send_elems += x;
      l.recv_elems = l.recvcounts[rank];
      l.one_elems = l.send_elems;
      l.recv_at = l.reduced_base();
      break;
  }
  return l;
}

// The data of the collectives that only move it (all-to-all(v), gather, scatter, all-gather-v):
// block blk of src holds raw bits hashed from (src, blk, index mod kPeriod, seed), so a block
// from the wrong rank, for the wrong rank, or shifted, differs in almost every element. Float
// types get their exponent's top bit cleared: every value is finite, none a NaN that a copy
// through registers might quieten. Returns kPeriod elements.
inline std::vector<uint8_t> move_pattern(coralDataType_t t, int src, int blk, size_t seed) {
  const size_t es = size_of(t);
  std::vector<uint8_t> pat(kPeriod * es);
  const bool fl = Val::of(t, 0).is_float();
  for (size_t k = 0; k < kPeriod; ++k) {
    uint64_t x = static_cast<uint64_t>(src + 1) * 0x9E3779B97F4A7C15ull +
                 static_cast<uint64_t>(blk + 1) * 0xC2B2AE3D27D4EB4Full + (k + 1) * 0x165667B19E3779F9ull +
                 seed * 0x27D4EB2F165667C5ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    if (fl) x &= ~(uint64_t{1} << (8 * es - 2));
    std::memcpy(&pat[k * es], &x, es);  // little-endian: the low bytes, top bit where the type has it
  }
  return pat;
}

// dst[i] <- pat[(phase + i) mod kPeriod] for i < n.
inline void tile(uint8_t* dst, size_t n, const std::vector<uint8_t>& pat, size_t es, size_t phase = 0) {
  for (size_t i = 0; i < n;) {
    const size_t k = (phase + i) % kPeriod, m = std::min(n - i, kPeriod - k);
    std::memcpy(dst + i * es, &pat[k * es], m * es);
    i += m;
  }
}

// Elements i < n of got that differ from pat[(phase + i) mod kPeriod]; a period at a time.
inline size_t wrong_tiled(const uint8_t* got, size_t n, const std::vector<uint8_t>& pat, size_t es, size_t phase = 0) {
  size_t wrong = 0;
  for (size_t i = 0; i < n;) {
    const size_t k = (phase + i) % kPeriod, m = std::min(n - i, kPeriod - k);
    if (std::memcmp(got + i * es, &pat[k * es], m * es) != 0)
      for (size_t j = 0; j < m; ++j) wrong += std::memcmp(got + (i + j) * es, &pat[(k + j) * es], es) != 0;
    i += m;
  }
  return wrong;
}

// buf <- rank's send buffer (send_elems elements). Reductions take fill()'s inputs over the whole
// buffer (the global index), all-gather and broadcast sum's values, the others move_pattern().
inline void fill_send(std::vector<uint8_t>& buf, const Layout& l, coralDataType_t t, coralRedOp_t op, size_t seed = 0) {
  const size_t es = size_of(t);
  switch (l.coll) {
    case Coll::AllReduce:
    case Coll::Reduce:
    case Coll::ReduceScatter:
    case Coll::ReduceScatterv:
      return fill(buf, l.rank, l.send_elems, t, op, seed);
    case Coll::AllGather:
    case Coll::Broadcast:
      return fill(buf, l.rank, l.send_elems, t, coralSum, seed);
    default:
      break;
  }
  buf.assign(l.send_elems * es, 0xA5);  // all-to-all-v's gaps: never sent
  if (l.coll == Coll::AllToAll || l.coll == Coll::Scatter)
    for (int j = 0; j < l.p; ++j) tile(buf.data() + j * l.n * es, l.n, move_pattern(t, l.rank, j, seed), es);
  else if (l.coll == Coll::AllToAllv)
    for (int j = 0; j < l.p; ++j)
      tile(buf.data() + l.sdispls[j] * es, l.sendcounts[j], move_pattern(t, l.rank, j, seed), es);
  else  // gather, all-gather-v: one block
    tile(buf.data(), l.send_elems, move_pattern(t, l.rank, 0, seed), es);
}

// Number of wrong elements in rank's result; got is its receive buffer (recv_elems elements;
// ignored where the rank receives nothing). For all-to-all-v and all-gather-v, before (if not
// null) is the receive buffer as it was before the call: elements in no block must keep it.
// A non-root's gather must leave its receive buffer as it was too.
inline size_t count_wrong(const Layout& l, coralDataType_t t, coralRedOp_t op, const void* got_v, size_t seed = 0,
                          const void* before_v = nullptr) {
  const size_t es = size_of(t), n = l.n;
  const auto* got = static_cast<const uint8_t*>(got_v);
  const auto* before = static_cast<const uint8_t*>(before_v);
  const int rank = l.rank;
  if (l.coll == Coll::Reduce && rank != l.root) return 0;
  if (l.coll == Coll::Gather && rank != l.root) {
    size_t w = 0;
    for (size_t i = 0; before && i < l.recv_elems * es; ++i) w += got[i] != before[i];
    return w;
  }
  size_t wrong = 0;
  switch (l.coll) {
    case Coll::AllReduce:
    case Coll::Reduce:
    case Coll::ReduceScatter:
    case Coll::ReduceScatterv:
      return wrong_tiled(got, l.recv_elems, reduced_table(l.p, t, op, seed), es, l.reduced_base() % kPeriod);
    case Coll::AllGather:
      for (int q = 0; q < l.p; ++q) {
        std::vector<uint8_t> pat(kPeriod * es);
        for (size_t k = 0; k < kPeriod; ++k) Val::input(t, q, k + seed, coralSum).store(&pat[k * es]);
        wrong += wrong_tiled(got + q * n * es, n, pat, es);
      }
      return wrong;
    case Coll::Broadcast: {
      std::vector<uint8_t> pat(kPeriod * es);
      for (size_t k = 0; k < kPeriod; ++k) Val::input(t, l.root, k + seed, coralSum).store(&pat[k * es]);
      return wrong_tiled(got, n, pat, es);
    }
    case Coll::AllToAll:
      for (int q = 0; q < l.p; ++q) wrong += wrong_tiled(got + q * n * es, n, move_pattern(t, q, rank, seed), es);
      return wrong;
    case Coll::Gather:
      for (int q = 0; q < l.p; ++q) wrong += wrong_tiled(got + q * n * es, n, move_pattern(t, q, 0, seed), es);
      return wrong;
    case Coll::Scatter:
      return wrong_tiled(got, n, move_pattern(t, l.root, rank, seed), es);
    case Coll::AllToAllv:
    case Coll::AllGatherv:
      break;
  }
  const bool a2a = l.coll == Coll::AllToAllv;
  std::vector<bool> in_block(before ? l.recv_elems : 0);
  for (int q = 0; q < l.p; ++q) {
    const size_t at = l.rdispls[q], m = l.recvcounts[q];
    wrong += wrong_tiled(got + at * es, m, move_pattern(t, q, a2a ? rank : 0, seed), es);
    if (before) std::fill(in_block.begin() + at, in_block.begin() + at + m, true);
  }
  for (size_t i = 0; i < in_block.size(); ++i)
    wrong += !in_block[i] && std::memcmp(got + i * es, before + i * es, es) != 0;
  return wrong;
}

}  // namespace exact
