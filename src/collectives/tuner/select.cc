#include "collectives/tuner/select.h"

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
    // S log P against 2S) only matter above a few KiB.
    // Over shared memory every pair is equally close, so the direct two-shot moves the ring's
    // bytes with 2 rounds of waiting instead of 2(P-1); across hosts the ring uses each link once.
    if (bytes > t.small_bytes) return t.single_host ? Algo::TwoShot : Algo::Ring;
    return a.nranks <= t.oneshot_max_ranks ? Algo::OneShot : Algo::RecursiveDoubling;
  }
  return default_algo(a.coll);
}

}  // namespace coral::sched
