// Deferred futex wakes. After publishing a counter, a side must check whether the other side
// sleeps on it, and that check needs a full fence after the publishing store (Dekker). A fence
// per message stalls the sender until its store owns the receiver's cache line: at P=8 that
// stall was 94% of a send. So a rank collects the counters it bumped and checks them all behind
// one fence, before it waits for anything itself and when its operation ends: a peer sleeps
// only after a long wait, so a late check costs nothing, and no check is ever skipped.
#pragma once
#include <atomic>
#include <cstdint>
#include <vector>

#include "base/wait.h"

namespace coral::transport::shm {

class Wakes {
 public:
  // Where a bump site keeps the round it was last added in: each (word, sleeping) pair has one
  // site, so a pair is listed once per round without searching the list.
  using Stamp = uint64_t;
  // `word` was bumped; a side sleeping on it sets `sleeping`.
  void add(std::atomic<uint32_t>* word, std::atomic<uint32_t>* sleeping, Stamp& stamp) {
    if (stamp == round_) return;
    stamp = round_;
    pending_.push_back({word, sleeping});
    if (pending_.size() >= kMaxPending) flush();
  }
  void flush() {
    if (pending_.empty()) return;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    for (const Pending& p : pending_)
      if (p.sleeping->load(std::memory_order_seq_cst)) futex_wake_all(p.word);
    pending_.clear();
    ++round_;
  }

 private:
  static constexpr size_t kMaxPending = 128;  // a long operation checks its wakes at least this often
  struct Pending {
    std::atomic<uint32_t>* word;
    std::atomic<uint32_t>* sleeping;
  };
  std::vector<Pending> pending_;
  Stamp round_ = 1;  // stamps start at 0: never listed
};

}  // namespace coral::transport::shm
