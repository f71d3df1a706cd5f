#include "collectives/verify_post.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace coral::collectives::verify_detail {

uint64_t input_key(int rank, size_t index) {
  uint64_t x = (static_cast<uint64_t>(rank) << 40) ^ (index + 0x9e3779b97f4a7c15ull);
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

namespace {

// Element offsets of block b in a reduce-scatter-v's send buffer: its counts back to back.
size_t prefix(const std::vector<size_t>& counts, int b) {
  return std::accumulate(counts.begin(), counts.begin() + b, size_t{0});
}

// max(displ + count) over the non-empty blocks: what a v-collective's buffer must hold.
size_t extent(const std::vector<size_t>& counts, const std::vector<size_t>& displs) {
  size_t e = 0;
  for (size_t j = 0; j < counts.size(); ++j)
    if (counts[j]) e = std::max(e, displs[j] + counts[j]);
  return e;
}

std::string describe(const Elem& got, const Elem& want) {
  if (got.garbage) return "never written";
  if (got.n != want.n) return fmt::format("{} contributions, expected {}", got.n, want.n);
  if (got.scaled != want.scaled) return "wrong averaging";
  return "the wrong inputs";
}

}  // namespace

Placement place(const CollArgs& a, size_t send_elems, size_t recv_elems) {
  const bool rooted = a.coll == Coll::Reduce || a.coll == Coll::Gather || a.coll == Coll::Scatter;
  const bool alias = a.in_place && a.coll != Coll::Barrier && a.coll != Coll::Send && a.coll != Coll::Recv &&
                     !(rooted && a.rank != a.root);
  if (!alias) return {0, send_elems, send_elems + recv_elems};
  Placement pl{0, 0, std::max(send_elems, recv_elems)};
  const size_t n = a.count, r = static_cast<size_t>(a.rank);
  switch (a.coll) {
    case Coll::ReduceScatter:
      pl.recv_at = r * n;
      break;
    case Coll::AllGather:
    case Coll::Gather:
      pl.send_at = r * n;
      break;
    case Coll::Scatter:
      pl.recv_at = r * n;
      break;
    case Coll::AllGatherv:
      if (a.v && a.v->recv_displs.size() > r) pl.send_at = a.v->recv_displs[r];
      break;
    case Coll::ReduceScatterv:
      if (a.v && a.v->recv_counts.size() > r) pl.recv_at = prefix(a.v->recv_counts, a.rank);
      break;
    default:
      break;
  }
  pl.size = std::max({pl.size, pl.send_at + send_elems, pl.recv_at + recv_elems});
  return pl;
}

std::string check_elems(const CollArgs& a, const Schedule& s) {
  const size_t p = static_cast<size_t>(a.nranks), n = a.count;
  const bool root = a.rank == a.root;
  size_t send = 0, recv = 0;
  const VCounts* v = a.v.get();
  const bool needs_v = a.coll == Coll::AllToAllv || a.coll == Coll::AllGatherv || a.coll == Coll::ReduceScatterv;
  if (needs_v && (!v || v->recv_counts.size() != p))
    return fmt::format("rank {}: no counts for {}", a.rank, coll_name(a.coll));
  switch (a.coll) {
    case Coll::AllToAll:
      send = recv = n * p;
      break;
    case Coll::Gather:
      send = n;
      recv = root ? n * p : 0;
      break;
    case Coll::Scatter:
      send = root ? n * p : 0;
      recv = n;
      break;
    case Coll::AllToAllv:
      send = extent(v->send_counts, v->send_displs);
      recv = extent(v->recv_counts, v->recv_displs);
      break;
    case Coll::AllGatherv:
      send = v->recv_counts[a.rank];
      recv = extent(v->recv_counts, v->recv_displs);
      break;
    case Coll::ReduceScatterv:
      send = prefix(v->recv_counts, a.nranks);
      recv = v->recv_counts[a.rank];
      break;
    default:
      return "";
  }
  if (s.send_elems == send && s.recv_elems == recv) return "";
  return fmt::format("rank {}: the schedule says send {} / recv {} elements, the call needs {} / {}", a.rank,
                     s.send_elems, s.recv_elems, send, recv);
}

std::string check_post(const std::vector<CollArgs>& args, const std::vector<std::span<const Elem>>& recv) {
  const CollArgs& a0 = args.at(0);
  const int p = a0.nranks;
  const Coll coll = a0.coll;
  const uint8_t want_scaled = a0.op == coralAvg && p > 1 ? 1 : 0;
  auto sum_at = [&](size_t index) {
    Elem e{0, static_cast<uint32_t>(p), want_scaled, false};
    for (int q = 0; q < p; ++q) e.key += input_key(q, index);
    return e;
  };
  // Every rank of an all-reduce wants the same sums: computed once, not P times.
  std::vector<Elem> sums;
  if (coll == Coll::AllReduce || coll == Coll::Reduce)
    for (size_t i = 0; i < a0.count; ++i) sums.push_back(sum_at(i));
  for (int r = 0; r < p; ++r) {
    const CollArgs& a = args[r];
    const std::span<const Elem> got = recv[r];
    const size_t n = a.count;
    std::string err;
    // Rank r's recv[at + i] for i < len must be want(i); `what` names the block.
    auto expect = [&](size_t at, size_t len, const std::string& what, const auto& want) {
      if (at + len > got.size() && len > 0) {
        err = fmt::format("rank {}: {} ends at element {}, past the {}-element recv buffer", r, what, at + len,
                          got.size());
        return false;
      }
      for (size_t i = 0; i < len; ++i) {
        const Elem w = want(i);
        if (!(got[at + i] == w)) {
          err = fmt::format("rank {} element {}{}: {}", r, at + i, what.empty() ? "" : " (" + what + ")",
                            describe(got[at + i], w));
          return false;
        }
      }
      return true;
    };
    auto block = [](int q) { return fmt::format("block {}", q); };
    switch (coll) {
      case Coll::AllReduce:
        expect(0, n, "", [&](size_t i) { return sums[i]; });
        break;
      case Coll::Reduce:
        if (r == a.root) expect(0, n, "", [&](size_t i) { return sums[i]; });
        break;
      case Coll::ReduceScatter:
        expect(0, n, "", [&](size_t i) { return sum_at(r * n + i); });
        break;
      case Coll::Broadcast:
        expect(0, n, "", [&](size_t i) { return input(a.root, i); });
        break;
      case Coll::AllGather:
        for (int q = 0; q < p && err.empty(); ++q) expect(q * n, n, block(q), [&](size_t i) { return input(q, i); });
        break;
      case Coll::AllToAll:
        for (int q = 0; q < p && err.empty(); ++q)
          expect(q * n, n, block(q), [&](size_t i) { return input(q, r * n + i); });
        break;
      case Coll::AllToAllv:
        for (int q = 0; q < p && err.empty(); ++q) {
          const size_t from = args[q].v->send_displs[r];
          expect(a.v->recv_displs[q], a.v->recv_counts[q], block(q), [&](size_t i) { return input(q, from + i); });
        }
        break;
      case Coll::Gather:
        if (r == a.root)
          for (int q = 0; q < p && err.empty(); ++q) expect(q * n, n, block(q), [&](size_t i) { return input(q, i); });
        break;
      case Coll::Scatter:
        expect(0, n, "", [&](size_t i) { return input(a.root, r * n + i); });
        break;
      case Coll::AllGatherv:
        for (int q = 0; q < p && err.empty(); ++q)
          expect(a.v->recv_displs[q], a.v->recv_counts[q], block(q), [&](size_t i) { return input(q, i); });
        break;
      case Coll::ReduceScatterv: {
        const size_t off = prefix(a.v->recv_counts, r);
        expect(0, a.v->recv_counts[r], "", [&](size_t i) { return sum_at(off + i); });
        break;
      }
      case Coll::Barrier:
      case Coll::Send:
      case Coll::Recv:
        break;
    }
    if (!err.empty()) return err;
  }
  return "";
}

}  // namespace coral::collectives::verify_detail
