#include "collectives/tuner/select.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "kernels/reduce.h"

namespace coral::sched {

Algo select_algo(const CollArgs& a, const TuneParams& t) {
  if (!t.rules.empty()) {
    size_t bytes = message_bytes(a);
    for (const SizeRule& r : t.rules)
      if (r.coll == a.coll && bytes >= r.lo && bytes < r.hi) return r.algo;
  }
  if (t.forced != Algo::Auto && supports(a.coll, t.forced)) return t.forced;
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
    // bytes with 2 rounds of waiting instead of 2(P-1). From 256 KiB Rabenseifner's pairwise
    // exchanges measured faster (its halves stay in cache) while the vector fits the last-level
    // cache: at P=4 by 8-15% up to 16 MiB, level at 64 MiB. Its 2 log2(P) rounds of waiting
    // cost more the more ranks share a core: at P=8 it measured level from 1 to 16 MiB, 2-23%
    // ahead at 256 KiB in one session and 14% behind in another, 17% behind at 64 MiB; so 4 MiB
    // stays its bound there (paired runs, bench/tuner/sweep.sh). With P not a power of two
    // rhd's folding costs a whole extra vector, so only then.
    if (t.single_host) {
      const bool pof2 = (a.nranks & (a.nranks - 1)) == 0;
      const size_t rhd_max = a.nranks <= 4 ? (32u << 20) : (4u << 20);
      return pof2 && a.nranks >= 4 && bytes >= (256u << 10) && bytes < rhd_max ? Algo::Rhd : Algo::TwoShot;
    }
    // Across hosts the link classes differ: price recursive doubling, Rabenseifner, the ring and
    // the hierarchical composition with the alpha-beta model and take the cheapest.
    ClusterModel m{a.nranks, std::max(1, a.nranks / std::max(1, t.hosts)), t.intra, t.inter, t.nic_share};
    double s = static_cast<double>(bytes);
    std::pair<double, Algo> best{cost_rd(m, s), Algo::RecursiveDoubling};
    best = std::min(best, {cost_rhd(m, s), Algo::Rhd});
    best = std::min(best, {cost_ring(m, s), Algo::Ring});
    if (a.nranks > t.hosts) best = std::min(best, {cost_hier(m, s), Algo::Hier});
    return best.second;
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
