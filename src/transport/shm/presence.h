// Yielding with more ranks than cores. A waiting rank gives its core away (sched_yield) so the
// rank it waits for can run; but each context switch costs about 2 us here, as much as a whole
// small all-reduce, and when the awaited rank is running on another CPU its message comes
// without this core. So a waiter publishes what it waits for (a FIFO counter and the value due)
// and its CPU, and before yielding reads the awaited rank's presence: it spins instead while
// that rank is on another CPU, not inside sched_yield, and not stuck in a wait of its own.
// At P=4 on 2 cores a one-shot call then costs 1.1 switches per core instead of 1.5-1.6.
// (Also spinning when no rank on this CPU could run measured no faster for one-shot and made
// the ring 20% slower: the spinner's reads of the others' counters pull those lines away from
// their writers.)
#pragma once
#include <atomic>
#include <cstdint>
#include <vector>

namespace coral::transport::shm {

struct Geometry;
class Segment;

struct alignas(64) Presence {
  std::atomic<int32_t> cpu{-1};      // where the rank ran when it last began or ended a wait
  std::atomic<uint32_t> wait{0};     // 0: not waiting (running, or preempted); else a Watch
  std::atomic<uint32_t> target{0};   // the watched counter is due to reach this
  std::atomic<uint32_t> yielded{0};  // inside sched_yield: maybe off its CPU
};

// A FIFO counter: head (messages committed) or tail (messages released) of FIFO `fifo` in local
// rank `owner`'s segment; or, with fifo == kPostWatch, the header of `owner`'s post due.
constexpr uint32_t kPostWatch = 0x7fff;
struct Watch {
  uint32_t owner, fifo;
  bool tail;
  uint32_t encode() const { return 1u | (tail ? 2u : 0u) | owner << 2 | fifo << 17; }
  static Watch decode(uint32_t w) { return {(w >> 2) & 0x7fffu, w >> 17, (w & 2u) != 0}; }
};

// Counters wrap: "reached" is a signed distance.
inline bool reached(uint32_t value, uint32_t target) { return static_cast<int32_t>(value - target) >= 0; }

// One rank's view of every local rank's presence.
class Yielder {
 public:
  // segments: every local rank's, by local index (ours included); local_of: per global rank,
  // its local index or -1.
  Yielder(const Geometry& g, std::vector<const Segment*> segments, int me, std::vector<int> local_of);
  // Called by a rank waiting for global rank `peer`, once per poll that would yield.
  void give_way(int peer);
  // The rule above, for a waiter for global rank `peer` on the calling thread's CPU.
  bool worth_yielding(int peer) const;

 private:
  Presence& presence(int l) const;
  bool runnable(const Presence& p) const;

  const Geometry& geo_;
  std::vector<const Segment*> segs_;
  int me_;
  std::vector<int> local_of_;
  unsigned polls_ = 0;
};

}  // namespace coral::transport::shm
