#include "balance.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace trainer {

SlowRank parse_slow_rank(const std::string& s) {
  SlowRank r;
  const size_t colon = s.find(':');
  size_t used_r = 0, used_f = 0;
  try {
    if (colon != std::string::npos) {
      r.rank = std::stoi(s.substr(0, colon), &used_r);
      r.factor = std::stod(s.substr(colon + 1), &used_f);
    }
  } catch (const std::exception&) {
    used_r = 0;
  }
  if (colon == std::string::npos || used_r != colon || used_r == 0 || used_f == 0 || used_f != s.size() - colon - 1 ||
      r.rank < 0 || !(r.factor >= 1 && r.factor <= kMaxSlowFactor))
    throw std::invalid_argument(fmt::format(
        "--slow-rank '{}': expected RANK:FACTOR, a rank and a slow-down from 1 to {:g} (e.g. 1:2)", s, kMaxSlowFactor));
  return r;
}

void slow_down(const SlowRank& slow, int rank, std::chrono::steady_clock::time_point t0) {
  if (rank != slow.rank) return;
  using Clock = std::chrono::steady_clock;
  const auto until =
      Clock::now() + std::chrono::duration_cast<Clock::duration>((slow.factor - 1) * (Clock::now() - t0));
  while (Clock::now() < until) {}
}

std::vector<double> Balancer::exchange(coral::communicator& comm, const std::vector<double>& last) {
  const size_t p = static_cast<size_t>(comm.size()), me = static_cast<size_t>(comm.rank());
  std::vector<double> w(p, 0.0);
  w[me] = samples_ > 0 && seconds_ > 0 ? samples_ / seconds_ : 0;
  comm.all_reduce(std::span<double>(w));
  reset();
  double fastest = *std::max_element(w.begin(), w.end());
  if (!(fastest > 0)) return last;
  for (size_t r = 0; r < p; r++) {
    if (w[r] <= 0) w[r] = last.size() == p ? last[r] : fastest;
    w[r] = std::max(w[r], fastest / 20);
  }
  return w;
}

}  // namespace trainer
