// A communicator's tuning in one object: the parameters, the CORAL_CHUNK_BYTES override and the
// trials, behind one question per new call shape (decide), plus the side-effect-free answers
// tools read (choose, chunk, tuning, overrides).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "collectives/tuner/select.h"
#include "collectives/tuner/trials.h"

namespace coral::collectives {

struct Decision {
  Algo algo = Algo::Auto;
  size_t chunk = 1;        // elements per pipelined piece
  Trial* trial = nullptr;  // this call is a running trial's: time it and report to record()
};

class Tuner {
 public:
  Tuner() = default;
  Tuner(TuneParams params, size_t chunk_override) : p_(std::move(params)), chunk_override_(chunk_override) {}

  // The communicator fills in what it learns at creation (hosts, measured link classes).
  TuneParams& params() { return p_; }
  const TuneParams& params() const { return p_; }

  // The algorithm and chunk for a call of this shape: a running trial's candidate, a settled
  // trial's pick, else the cost model's. max_bytes: the links' largest message; trials: whether
  // this call may be timed (host buffers, not the trials' own agreement).
  Decision decide(const CollArgs& a, size_t max_bytes, bool trials);
  // decide() without trials: the cost model's pick and chunk, which reads only the parameters
  // (fixed once the communicator is made), so any thread may ask while calls run.
  Decision fixed(const CollArgs& a, size_t max_bytes) const;
  // A trial's call took `seconds`; true once its scores are due for the ranks' agreement.
  bool record(Trial& t, double seconds) { return t.record(seconds); }
  // Keeps the pick from the ranks' combined scores (the same on every rank).
  void settle(Trial& t, const std::vector<double>& agreed, const CollArgs& a);

  // What the communicator runs for this shape once trials are over (a settled pick, else the
  // cost model's); tools report it.
  Algo choose(const CollArgs& a) const;
  // The chunk in bytes: CORAL_CHUNK_BYTES, else the cost model's, at most max_bytes.
  size_t chunk(const CollArgs& a, Algo algo, size_t max_bytes) const;
  // True while calls of this shape still run trials: every rank answers the same after the
  // same calls.
  bool tuning(const CollArgs& a) const;
  // The settled picks as a CORAL_ALGO value (collectives::as_overrides).
  std::string overrides() const { return as_overrides(trials_); }

 private:
  Trial* trial_for(const CollArgs& a);

  TuneParams p_;
  size_t chunk_override_ = 0;
  Trials trials_;  // per (collective, trial_bucket): running or settled
};

}  // namespace coral::collectives
