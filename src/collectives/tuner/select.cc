#include "collectives/tuner/select.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "kernels/reduce.h"

namespace coral::sched {

std::optional<Algo> user_choice(const CollArgs& a, const TuneParams& t) {
  if (!t.rules.empty()) {
    size_t bytes = message_bytes(a);
    for (const SizeRule& r : t.rules)
      if (r.coll == a.coll && bytes >= r.lo && bytes < r.hi) return r.algo;
  }
  if (t.forced != Algo::Auto && supports(a.coll, t.forced)) return t.forced;
  return std::nullopt;
}

std::vector<std::pair<double, Algo>> priced_allreduce(const CollArgs& a, const TuneParams& t) {
  ClusterModel m{a.nranks, std::max(1, a.nranks / std::max(1, t.hosts)), t.intra, t.inter, t.nic_share};
  const double s = static_cast<double>(a.count * kernels::dtype_size(a.dtype));
  std::vector<std::pair<double, Algo>> priced{
      {cost_rd(m, s), Algo::RecursiveDoubling}, {cost_rhd(m, s), Algo::Rhd}, {cost_ring(m, s), Algo::Ring}};
  if (a.nranks > t.hosts) priced.emplace_back(cost_hier(m, s), Algo::Hier);
  std::sort(priced.begin(), priced.end());
  return priced;
}

Algo select_algo(const CollArgs& a, const TuneParams& t) {
  if (std::optional<Algo> user = user_choice(a, t)) return *user;
  if (a.coll == Coll::AllReduce) {
    size_t bytes = a.count * kernels::dtype_size(a.dtype);
    // Small messages are latency-bound: one-shot waits once (for all peers at the same time),
    // recursive doubling log2(P) times, the ring 2(P-1) times. Their extra bytes (S(P-1) and
    // S log P against 2S) stop paying above a few KiB (bench/tuner/sweep.sh: 2 KiB here).
    const bool oneshot = t.single_host && a.nranks <= t.oneshot_max_ranks;
    if (bytes <= t.small_bytes) return oneshot ? Algo::OneShot : Algo::RecursiveDoubling;
    // Written once and read in place by every peer (a post), the vector costs one-shot less than
    // two-shot's second round of waiting until the peers' reads add up (paired runs: 17-19%
    // faster at 8 KiB for P=4 and P=8, 12% at 16 KiB for P=4; 9% slower at 32 KiB for P=4, 13%
    // at 16 KiB for P=8).
    if (oneshot && bytes * static_cast<size_t>(a.nranks - 1) <= t.oneshot_read_bytes) return Algo::OneShot;
    // Over shared memory every pair is equally close, so the direct two-shot moves the ring's
    // bytes with 2 rounds of waiting instead of 2(P-1). At P=4, from 256 KiB Rabenseifner's
    // pairwise exchanges measured faster (its halves stay in cache) while the vector fits the
    // last-level cache: by 8-15% up to 16 MiB, level at 64 MiB. With P not a power of two rhd's
    // folding costs a whole extra vector, so only then.
    if (t.single_host) {
      const bool pof2 = (a.nranks & (a.nranks - 1)) == 0;
      if (a.nranks <= 4)
        return a.nranks == 4 && bytes >= (256u << 10) && bytes < (32u << 20) ? Algo::Rhd : Algo::TwoShot;
      // More ranks than 4 (paired runs on 2 cores at P=6, 8 and 16; P=8 agreed with the sweeps
      // of two sessions): rhd leads
      // below 128 KiB (at P=8 by 1.2-1.4x over two-shot at 32-64 KiB, at P=16 by 1.25-1.45x),
      // and loses from there (1.1-1.4x behind). The ring then leads once S reaches 256 P^3
      // bytes, from 128 KiB up to P=8 and from 1 MiB at P=16 (two-shot 1.07-1.18x behind it
      // at 2-8 MiB): its 2(P-1) waits cost more the more ranks share a core, so its crossover
      // grows fast with P. In an earlier session with 3-4x dearer context switches the ring ran
      // 1.4-2.3x behind at 64-256 KiB: CORAL_TUNE_TRIALS follows such a machine.
      const double p = a.nranks;
      if (static_cast<double>(bytes) >= std::max(128.0 * 1024, 256 * p * p * p)) return Algo::Ring;
      return pof2 && bytes < (128u << 10) ? Algo::Rhd : Algo::TwoShot;
    }
    // Across hosts the link classes differ: the cost model's cheapest.
    return priced_allreduce(a, t).front().second;
  }
  if (a.coll == Coll::Broadcast || a.coll == Coll::Reduce) {
    // Binomial trees: log P hops against the chain's P-1; the chain's pipeline wins large ones.
    return a.count * kernels::dtype_size(a.dtype) <= t.mid_bytes ? Algo::Tree : Algo::Chain;
  }
  return default_algo(a.coll);
}

size_t select_chunk(const CollArgs& a, Algo algo, const TuneParams& t, size_t max_bytes) {
  // Only the chains are pipelines whose depth small chunks hide. A binomial tree's root sends
  // every chunk to log2 P children, so its port, not the depth, sets the pace. The double binary
  // tree runs both directions in one step order, so each chunk waits about a round trip through
  // the tree: more chunks, more round trips (the simulator agrees: tests/unit/test_tuner.cc).
  const int d = algo == Algo::Chain ? a.nranks - 1 : 0;
  if (d < 2 || max_bytes <= kMinChunk) return max_bytes;
  const LinkModel& l = t.single_host || t.hosts <= 1 ? t.intra : t.inter;
  const double s = static_cast<double>(message_bytes(a));
  const double best = std::sqrt(s * l.alpha / ((d - 1) * l.beta));
  size_t c = kMinChunk;
  while (c < max_bytes && static_cast<double>(c) * 1.5 < best) c *= 2;
  return std::min(c, max_bytes);
}

}  // namespace coral::sched
