#include "collectives/tuner/trials.h"

#include <algorithm>
#include <bit>
#include <numeric>
#include <utility>

#include "base/error.h"
#include "kernels/reduce.h"

namespace coral::collectives {

namespace {

void add(std::vector<Algo>& v, Algo a) {
  if (std::find(v.begin(), v.end(), a) == v.end()) v.push_back(a);
}

}  // namespace

std::vector<Algo> trial_candidates(const CollArgs& a, const TuneParams& t) {
  std::vector<Algo> c;
  // Only the all-reduce has rivals close enough to need a clock; up to small_bytes one-shot
  // (or recursive doubling) wins by whole round trips, and two ranks leave nothing to choose.
  if (!t.trials || a.coll != Coll::AllReduce || a.nranks < 3 || user_choice(a, t)) return c;
  const size_t bytes = a.count * kernels::dtype_size(a.dtype);
  if (bytes <= t.small_bytes) return c;
  c.push_back(select_algo(a, t));
  const bool pof2 = (a.nranks & (a.nranks - 1)) == 0;
  if (t.single_host) {
    // Whatever won past small_bytes in some session's sweeps (bench/tuner/results.txt); on one
    // host the hierarchical schedule is a ring, so no rival of its own.
    const size_t reads = bytes * static_cast<size_t>(a.nranks - 1);
    if (a.nranks <= t.oneshot_max_ranks && reads <= 4 * t.oneshot_read_bytes) add(c, Algo::OneShot);
    if (bytes <= (64u << 10)) add(c, Algo::RecursiveDoubling);
    add(c, Algo::TwoShot);
    if (pof2) add(c, Algo::Rhd);
    if (bytes >= (128u << 10)) add(c, Algo::Ring);
  } else {
    // Across hosts: whatever the cost model prices within 2x of its best.
    const std::vector<std::pair<double, Algo>> priced = priced_allreduce(a, t);
    for (const auto& [cost, algo] : priced)
      if (cost <= 2 * priced.front().first) add(c, algo);
  }
  if (c.size() > 4) c.resize(4);  // each candidate costs (warmup + rounds) x passes calls
  if (c.size() < 2) c.clear();
  return c;
}

TrialShape trial_shape(size_t bytes) {
  // Small calls take many calls to reach their steady time, again after another algorithm's
  // block, and cost microseconds each: more warm-up (bench/tuner/results.txt).
  if (bytes < (64u << 10)) return {8, 32, 2};
  if (bytes < (256u << 10)) return {4, 16, 2};
  if (bytes < (1u << 20)) return {2, 5, 2};
  if (bytes < (16u << 20)) return {1, 3, 2};
  return {1, 2, 1};
}

int trial_bucket(size_t bytes) { return static_cast<int>(std::bit_width(bytes)); }

std::pair<int, int> trial_key(const CollArgs& a) { return {static_cast<int>(a.coll), trial_bucket(message_bytes(a))}; }

Trial::Trial(std::vector<Algo> candidates, TrialShape shape)
    : cand_(std::move(candidates)),
      shape_(shape),
      times_(cand_.size() * static_cast<size_t>(std::max(0, shape.passes))) {
  if (cand_.empty() || shape_.warmup < 0 || shape_.rounds < 1 || shape_.passes < 1)
    throw Error(coralInternalError, "a trial needs candidates, rounds and passes");
}

bool Trial::record(double seconds) {
  if (decided()) return false;
  if (calls_ % static_cast<size_t>(shape_.warmup + shape_.rounds) >= static_cast<size_t>(shape_.warmup))
    times_[block()].push_back(seconds);
  ++calls_;
  return block() == times_.size();
}

std::vector<double> Trial::scores() const {
  std::vector<double> s(cand_.size(), 0);
  for (size_t b = 0; b < times_.size(); ++b) {
    const std::vector<double>& t = times_[b];
    if (t.empty()) continue;
    const double mean = std::accumulate(t.begin(), t.end(), 0.0) / static_cast<double>(t.size());
    double& best = s[b % cand_.size()];
    best = b < cand_.size() ? mean : std::min(best, mean);
  }
  return s;
}

void Trial::decide(const std::vector<double>& agreed) {
  if (agreed.size() != cand_.size()) throw Error(coralInternalError, "trial scores do not match the candidates");
  size_t best = 0;
  for (size_t i = 1; i < agreed.size(); ++i)
    if (agreed[i] < agreed[best]) best = i;
  // The model's pick stays unless a rival beats it clearly: a near tie is noise here, and
  // staying keeps the choice the same from run to run more often.
  pick_ = agreed[best] < kTrialMargin * agreed[0] ? cand_[best] : cand_[0];
}

std::string as_overrides(const Trials& trials) {
  std::vector<SizeRule> rules;
  for (const auto& [key, trial] : trials) {  // ordered by collective, then by size
    if (!trial.decided()) continue;
    const Coll coll = static_cast<Coll>(key.first);
    const size_t lo = key.second == 0 ? 0 : size_t{1} << (key.second - 1), hi = size_t{1} << key.second;
    SizeRule* last = rules.empty() ? nullptr : &rules.back();
    if (last && last->coll == coll && last->hi == lo && last->algo == trial.pick())
      last->hi = hi;  // a neighbour with the same pick: one range
    else
      rules.push_back({coll, lo, hi, trial.pick()});
  }
  return format_rules(rules);
}

}  // namespace coral::collectives
