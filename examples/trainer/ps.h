// --mode ps: asynchronous parameter servers, the design data parallelism had before all-reduce
// (DistBelief; Li et al., OSDI 2014). Ranks 0..S-1 each own a contiguous shard of the parameters
// and its optimizer state; the other ranks are workers. A worker computes a gradient on its part
// of a global batch with the parameters it holds, pushes each shard's slice to that shard's
// server and waits for the reply: the shard as it is once that gradient was applied. A server
// applies gradients one at a time as they arrive, with no barrier between workers, so a gradient
// may be computed on parameters that other workers' updates have changed since: its staleness is
// the number of updates applied to the shard between the worker's pull and its push.
// --max-staleness k makes it stale-synchronous (Ho et al., NIPS 2013): a worker gets its reply
// only once no worker is more than k pushes behind it, which bounds a gradient's staleness by
// (workers - 1) * (2k + 1).
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

namespace trainer {

// A server's bookkeeping of one shard, apart from the messages, so it can be tested alone.
class PsBook {
 public:
  PsBook(int workers, int max_staleness) : clock_(static_cast<size_t>(workers), 0), bound_(max_staleness) {}
  // Worker w pushed a gradient computed on shard version `seen`: counts it and returns its
  // staleness. A push of no samples (a worker's empty part of a short last batch) is not an
  // update: it only advances the worker's clock.
  int64_t push(int w, int64_t seen, bool update = true) {
    const int64_t s = version_ - seen;
    clock_[static_cast<size_t>(w)]++;
    if (!update) return 0;
    version_++;
    count_++;
    sum_ += s;
    max_ = std::max(max_, s);
    return s;
  }
  // Whether worker w, whose last push was applied, may have its reply (and so compute again).
  bool may_reply(int w) const {
    if (bound_ < 0) return true;
    return *std::min_element(clock_.begin(), clock_.end()) >= clock_[static_cast<size_t>(w)] - bound_;
  }
  int64_t version() const { return version_; }
  int64_t clock(int w) const { return clock_[static_cast<size_t>(w)]; }
  int64_t count() const { return count_; }
  int64_t staleness_sum() const { return sum_; }
  int64_t staleness_max() const { return max_; }

 private:
  std::vector<int64_t> clock_;  // pushes applied, per worker
  int bound_;
  int64_t version_ = 0, count_ = 0, sum_ = 0, max_ = 0;
};

}  // namespace trainer
