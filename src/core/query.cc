// What a call of a given shape runs and what it costs, for tools (coralCommQuery) and for
// pricing a group (coralGroupEstimate, NCCL's ncclGroupSimulateEnd).
#include <fmt/format.h>

#include <algorithm>

#include "base/error.h"
#include "collectives/simulate.h"
#include "core/communicator.h"
#include "kernels/reduce.h"

namespace coral {

Communicator::CallInfo Communicator::query(collectives::CollArgs a, bool device) {
  place(a);
  const collectives::Algo algo = tuner_.choose(a);
  const size_t max_bytes = device ? device_chunk_bytes() : chunk_bytes();
  return {algo, tuner_.chunk(a, algo, max_bytes), !device && tuner_.tuning(a)};
}

double Communicator::estimate_us(collectives::CollArgs a, bool device) {
  using collectives::Coll;
  const collectives::TuneParams& tune = tuner_.params();
  const size_t es = kernels::dtype_size(a.dtype);
  if (a.coll == Coll::Send || a.coll == Coll::Recv) {
    if (a.root == rank_) return 0;  // a copy in memory, which the model does not price
    const collectives::LinkModel& l = host_index_[a.root] == host_index_[rank_] ? tune.intra : tune.inter;
    return (l.alpha + static_cast<double>(a.count * es) * l.beta) * 1e6;
  }
  if (a.coll == Coll::AllToAllv) {
    // Only this rank's counts are known here: priced as the even all-to-all that moves as much
    // as this rank sends or receives, whichever is more.
    size_t sent = 0, received = 0;
    for (size_t n : a.v->send_counts) sent += n;
    for (size_t n : a.v->recv_counts) received += n;
    a.coll = Coll::AllToAll;
    a.count = (std::max(sent, received) + nranks_ - 1) / nranks_;
    a.v = nullptr;
    a.in_place = false;
  }
  a.op = coralSum;  // the op changes no message (a PreMulSum handle is no op the builders know)
  // Past 1 GiB a rank, the schedule's messages grow in number, not in kind (each chunk is
  // pipelined alike): the time of 1 GiB scaled up, instead of a schedule of millions of steps
  // (4 TiB took 24 s and 5 GiB of memory to price).
  constexpr size_t kPricedBytes = size_t{1} << 30;
  if (!a.v && a.count > kPricedBytes / es) {
    const double scale = static_cast<double>(a.count) / static_cast<double>(kPricedBytes / es);
    a.count = kPricedBytes / es;
    return estimate_us(a, device) * scale;
  }
  place(a);
  const CallInfo info = query(a, device);
  a.chunk = std::max<size_t>(1, info.chunk_bytes / es);
  collectives::Cluster cluster{
      host_index_, {tune.intra.alpha, tune.intra.beta, 0}, {tune.inter.alpha, tune.inter.beta, 0}};
  // A v-collective's count is each rank's own entry of the counts every rank passed.
  const collectives::SimResult r = collectives::simulate_ranks(
      [&](int q) {
        collectives::CollArgs b = a;
        if (a.v) b.count = a.v->recv_counts[static_cast<size_t>(q)];
        return b;
      },
      info.algo, cluster);
  if (!r.error.empty())
    fail(coralInternalError,
         fmt::format("the cost model could not time {} of {} elements with {}: {}", collectives::coll_name(a.coll),
                     a.count, collectives::algo_name(info.algo), r.error));
  return r.seconds * 1e6;
}

}  // namespace coral
