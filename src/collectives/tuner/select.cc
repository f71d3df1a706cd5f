#include "collectives/tuner/select.h"

#include "kernels/reduce.h"

namespace coral::sched {

Algo select_algo(const CollArgs& a, const TuneParams& t) {
  if (t.forced != Algo::Auto && supports(a.coll, t.forced)) return t.forced;
  if (a.coll == Coll::AllReduce) {
    size_t bytes = a.count * kernels::dtype_size(a.dtype);
    // Recursive doubling pays log2(P) latencies against the ring's 2(P-1); its extra bandwidth
    // (S log P vs 2S) only matters above a few KiB.
    return bytes <= t.small_bytes ? Algo::RecursiveDoubling : Algo::Ring;
  }
  return default_algo(a.coll);
}

}  // namespace coral::sched
