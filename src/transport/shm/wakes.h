// Deferred futex wakes. After publishing a counter, a side must check whether the other side
// sleeps on it, and that check needs a full fence after the publishing store (Dekker). A fence
// per message stalls the sender until its store owns the receiver's cache line: at P=8 that
// stall was 94% of a send. So a rank collects the counters it bumped and checks them all behind
// one fence, before it waits for anything itself and when its operation ends: a peer sleeps
// only after a long wait, so a late check costs nothing, and no check is ever skipped.
#pragma once
#include <atomic>
#include <cstdint>

#include "core/wait.h"

namespace coral::transport::shm {

class Wakes {
 public:
  // `word` was bumped; a side sleeping on it sets `sleeping`. A small open-addressed table keeps
  // each pair once: a one-shot call adds 2(P-1) pairs, and a scan of the list per add cost more
  // than the rest of the call's bookkeeping.
  void add(std::atomic<uint32_t>* word, std::atomic<uint32_t>* sleeping) {
    // Both pointers: a post adds one word with each reader's flag.
    const uint64_t key = reinterpret_cast<uintptr_t>(word) ^ (reinterpret_cast<uintptr_t>(sleeping) << 7);
    size_t i = key * 0x9e3779b97f4a7c15ull >> (64 - kBits);
    for (; table_[i].word; i = (i + 1) & (kSize - 1))
      if (table_[i].word == word && table_[i].sleeping == sleeping) return;
    table_[i] = {word, sleeping};
    used_[n_++] = static_cast<uint16_t>(i);
    if (n_ == kMaxPending) flush();
  }
  void flush() {
    if (n_ == 0) return;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    for (size_t k = 0; k < n_; ++k) {
      Pending& p = table_[used_[k]];
      if (p.sleeping->load(std::memory_order_seq_cst)) futex_wake_all(p.word);
      p = {};
    }
    n_ = 0;
  }

 private:
  static constexpr int kBits = 8;
  static constexpr size_t kSize = size_t{1} << kBits;
  static constexpr size_t kMaxPending = kSize / 2;  // keeps the table at most half full
  struct Pending {
    std::atomic<uint32_t>* word = nullptr;
    std::atomic<uint32_t>* sleeping = nullptr;
  };
  Pending table_[kSize];
  uint16_t used_[kMaxPending];
  size_t n_ = 0;
};

}  // namespace coral::transport::shm
