// The distributed sampler: every rank draws the same per-epoch permutation from (seed, epoch),
// cuts it into global batches of B (the last one may be short), and takes its own contiguous,
// disjoint part of each batch. Part sizes differ by at most one (or follow the weights that
// --balance sets); the union over ranks is exactly the global batch, whatever P is, which is
// what makes P ranks equivalent to one rank with the same global batch.
#pragma once
#include <cstdint>
#include <utility>
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
    size_t lo = bound(b, rank, nranks), hi = bound(b, rank + 1, nranks);
    return {perm_.begin() + static_cast<ptrdiff_t>(start + lo), perm_.begin() + static_cast<ptrdiff_t>(start + hi)};
  }

  // Rank r's part of each batch in proportion to weights[r] (one per rank, positive, the same
  // on every rank); empty: equal parts.
  void set_weights(std::vector<double> w) { weights_ = std::move(w); }
  const std::vector<double>& weights() const { return weights_; }
  size_t part_size(size_t b, int rank, int nranks) const { return bound(b, rank + 1, nranks) - bound(b, rank, nranks); }

 private:
  // Where rank r's part starts in a batch of b.
  size_t bound(size_t b, int r, int nranks) const {
    if (weights_.size() != static_cast<size_t>(nranks)) return b * r / nranks;
    if (r == nranks) return b;
    double below = 0, total = 0;
    for (int i = 0; i < nranks; i++) (i < r ? below : total) += weights_[static_cast<size_t>(i)];
    total += below;
    return static_cast<size_t>(static_cast<double>(b) * below / total);
  }

  std::vector<double> weights_;
  size_t n_, batch_;
  uint64_t seed_;
  std::vector<uint32_t> perm_;
};

}  // namespace trainer
