// Stragglers: --slow-rank makes one rank slower on purpose (experiments and tests); --balance
// gives each rank a part of the global batch in proportion to its measured speed, so the fast
// ranks stop waiting for the slow one. Gradients need no reweighting: every rank's sum is scaled
// by 1 / global batch, so the parts still add up to exactly the large-batch mean.
#pragma once
#include <coral/coral.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace trainer {

struct SlowRank {
  int rank = -1;      // as launched (the job's first rank numbers)
  double factor = 1;  // its compute takes this many times as long
};
SlowRank parse_slow_rank(const std::string& s);  // "R:FACTOR", 1 <= FACTOR <= kMaxSlowFactor
constexpr double kMaxSlowFactor = 1000;
// On the slow rank: spins (a slower CPU stays busy, and short sleeps overshoot) until the compute
// that began at t0 has taken FACTOR times as long.
void slow_down(const SlowRank& slow, int rank, std::chrono::steady_clock::time_point t0);

class Balancer {
 public:
  explicit Balancer(int64_t every) : every_(every) {}
  // Compute (not communication) of one step: samples and seconds.
  void record(size_t samples, double seconds) {
    samples_ += static_cast<double>(samples);
    seconds_ += seconds;
  }
  bool due(int64_t gstep) const { return every_ > 0 && gstep > 0 && gstep % every_ == 0; }
  // Collective: every rank's speed since the last call, as weights for the sampler. A rank that
  // computed nothing keeps its last weight; none falls below 1/20 of the fastest, so every rank
  // keeps some work and its speed stays measured.
  std::vector<double> exchange(coral::communicator& comm, const std::vector<double>& last);
  void reset() { samples_ = seconds_ = 0; }

 private:
  int64_t every_;
  double samples_ = 0, seconds_ = 0;
};

}  // namespace trainer
