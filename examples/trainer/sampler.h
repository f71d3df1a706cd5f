// The distributed sampler: every rank draws the same per-epoch permutation from (seed, epoch),
// cuts it into global batches of B (the last one may be short), and takes its own contiguous,
// disjoint part of each batch. Part sizes differ by at most one; the union over ranks is exactly the global batch,
// whatever P is, which is what makes P ranks equivalent to one rank with the same global batch.
#pragma once
#include <cstdint>
#include <vector>

#include "rng.h"

namespace trainer {

class Sampler {
 public:
  Sampler(size_t n, size_t global_batch, uint64_t seed) : n_(n), batch_(global_batch), seed_(seed) {}

  size_t steps_per_epoch() const { return (n_ + batch_ - 1) / batch_; }

  void start_epoch(int64_t epoch) {
    perm_.resize(n_);
    for (size_t i = 0; i < n_; i++) perm_[i] = static_cast<uint32_t>(i);
    Rng rng(seed_ ^ (0x5851f42d4c957f2dULL * static_cast<uint64_t>(epoch + 1)));
    rng.shuffle(perm_);
  }

  size_t batch_size(size_t step) const {
    size_t start = step * batch_;
    return start + batch_ <= n_ ? batch_ : n_ - start;
  }

  // Indices of rank's part of global batch `step` of the current epoch.
  std::vector<uint32_t> shard(size_t step, int rank, int nranks) const {
    size_t start = step * batch_, b = batch_size(step);
    size_t lo = b * rank / nranks, hi = b * (rank + 1) / nranks;
    return {perm_.begin() + static_cast<ptrdiff_t>(start + lo), perm_.begin() + static_cast<ptrdiff_t>(start + hi)};
  }

 private:
  size_t n_, batch_;
  uint64_t seed_;
  std::vector<uint32_t> perm_;
};

}  // namespace trainer
