// Trials (CORAL_TUNE_TRIALS=1): the tuner's pick timed against its rivals on the first calls of
// a size, for machines where the cost model's crossovers move (on an oversubscribed host they
// follow the cost of a context switch, which moves between sessions: bench/tuner/results.txt).
//
// Each size class (collective, power-of-two byte bucket) runs its candidates one after the
// other, each for a few untimed warm-up calls and then `rounds` timed ones: back to back, as a
// training loop or a benchmark repeats a call. (Interleaved, each call paid for the previous
// algorithm's exit skew and cache state, and the picks flipped between runs.) Below 16 MiB the
// whole sequence runs twice and each candidate keeps its better pass: a process's first calls at
// a new size run slow whatever the algorithm, which would sink whichever went first.
// Every call of the trial is a real call with the caller's data, so nothing is moved twice.
// After the last timed call each rank scores every candidate (its mean time per call), one tiny
// all-reduce (max) makes the scores the same everywhere, and the cheapest is kept for the
// bucket. Ranks agree without exchanging anything else: collective calls come in the same order
// everywhere, so every rank runs the same candidate on the same call.
//
// Off by default because the pick depends on timing: two runs may reduce in different orders
// (rhd pairs partial sums, the ring and two-shot chain them), so results stop being bitwise
// reproducible from run to run. Replicas within a run still agree: every rank runs the same
// algorithm on every call, and each algorithm gives every rank the same bits.
#pragma once
#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "collectives/tuner/select.h"

namespace coral::collectives {

// The algorithms worth timing for this call, select_algo's pick first; empty where the pick
// stands (trials off, a user's override, a latency-bound size, or no rival worth a call).
std::vector<Algo> trial_candidates(const CollArgs& a, const TuneParams& t);
// How long a trial of this size runs: untimed calls, then timed ones, per block, and passes over
// the candidates. Fewer for large calls, whose times vary less and cost more.
struct TrialShape {
  int warmup, rounds, passes;
};
TrialShape trial_shape(size_t bytes);
// The size class a trial's pick holds for, and a call's key in Trials: (collective, bucket).
int trial_bucket(size_t bytes);
std::pair<int, int> trial_key(const CollArgs& a);

constexpr double kTrialMargin = 0.95;

class Trial {
 public:
  Trial(std::vector<Algo> candidates, TrialShape shape);
  bool decided() const { return pick_ != Algo::Auto; }
  Algo pick() const { return pick_; }
  // The algorithm the next call of the bucket runs.
  Algo current() const { return cand_[block() % cand_.size()]; }
  // The call that current() named took `seconds`. True once the last timed call is in: then
  // scores() are due for the agreement.
  bool record(double seconds);
  // Per candidate, this rank's mean time per call over a block in seconds, the better pass's.
  // The mean, because it is a loop's period: with more ranks than cores a rank often finishes
  // two calls per turn on its core, one long and one short, and a median picks one of the two.
  std::vector<double> scores() const;
  // agreed: the ranks' scores combined identically everywhere. Keeps the cheapest, but the first
  // candidate (the cost model's pick) unless the cheapest is under kTrialMargin times its score.
  void decide(const std::vector<double>& agreed);
  const std::vector<Algo>& candidates() const { return cand_; }

 private:
  size_t block() const { return calls_ / static_cast<size_t>(shape_.warmup + shape_.rounds); }
  std::vector<Algo> cand_;
  TrialShape shape_;
  size_t calls_ = 0;
  std::vector<std::vector<double>> times_;  // per block: its timed calls
  Algo pick_ = Algo::Auto;
};

// A communicator's trials, by trial_key.
using Trials = std::map<std::pair<int, int>, Trial>;

// The decided picks as a CORAL_ALGO value (size ranges, neighbours with one pick merged), so a
// later run can fix what trials found without running them; empty when none is decided.
std::string as_overrides(const Trials& trials);

}  // namespace coral::collectives
