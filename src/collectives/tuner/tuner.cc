#include "collectives/tuner/tuner.h"

#include <algorithm>

#include "base/log.h"
#include "kernels/reduce.h"

namespace coral::collectives {

Trial* Tuner::trial_for(const CollArgs& a) {
  if (!p_.trials) return nullptr;
  const std::pair<int, int> key = trial_key(a);
  auto it = trials_.find(key);
  if (it == trials_.end()) {
    std::vector<Algo> c = trial_candidates(a, p_);
    if (c.empty()) return nullptr;
    it = trials_.emplace(key, Trial(std::move(c), trial_shape(message_bytes(a)))).first;
  }
  return &it->second;
}

Decision Tuner::decide(const CollArgs& a, size_t max_bytes, bool trials) {
  Trial* t = trials ? trial_for(a) : nullptr;
  if (!t) return fixed(a, max_bytes);
  Decision d;
  if (t->decided()) {
    d.algo = t->pick();
  } else {
    d.algo = t->current();
    d.trial = t;
  }
  d.chunk = std::max<size_t>(1, chunk(a, d.algo, max_bytes) / kernels::dtype_size(a.dtype));
  return d;
}

Decision Tuner::fixed(const CollArgs& a, size_t max_bytes) const {
  Decision d;
  d.algo = select_algo(a, p_);
  d.chunk = std::max<size_t>(1, chunk(a, d.algo, max_bytes) / kernels::dtype_size(a.dtype));
  return d;
}

void Tuner::settle(Trial& t, const std::vector<double>& agreed, const CollArgs& a) {
  t.decide(agreed);
  std::string times;
  for (size_t i = 0; i < agreed.size(); ++i)
    times += fmt::format("{}{} {:.1f}", i ? ", " : "", algo_name(t.candidates()[i]), agreed[i] * 1e6);
  log::info(log::Tune, "{} of {} B: trial means (us) {}: {}", coll_name(a.coll), message_bytes(a), times,
            algo_name(t.pick()));
}

Algo Tuner::choose(const CollArgs& a) const {
  if (p_.trials) {
    auto it = trials_.find(trial_key(a));
    if (it != trials_.end() && it->second.decided()) return it->second.pick();
  }
  return select_algo(a, p_);
}

size_t Tuner::chunk(const CollArgs& a, Algo algo, size_t max_bytes) const {
  if (chunk_override_ > 0) return std::min(chunk_override_, max_bytes);
  return select_chunk(a, algo, p_, max_bytes);
}

bool Tuner::tuning(const CollArgs& a) const {
  if (trial_candidates(a, p_).empty()) return false;
  auto it = trials_.find(trial_key(a));
  return it == trials_.end() || !it->second.decided();
}

}  // namespace coral::collectives
