// Yielding with more ranks than cores. A waiting rank gives its core away (sched_yield) so the
// rank it waits for can run, but each context switch costs about 2 us here: as much as a whole
// small all-reduce. So a waiter publishes what it waits for (a FIFO counter and the value due)
// and its CPU, and before yielding reads its peers' presence:
// - the rank it awaits runs on another CPU and is getting somewhere: its message comes without
//   this core, so spin;
// - no rank on this CPU could run (all wait for counters not yet due): a yield would only bounce
//   the core between waiters, so spin;
// - otherwise yield.
// With two ranks per core this lets a rank finish two blocking calls per turn on its core, so a
// call costs one switch instead of two or three.
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
// rank `owner`'s segment.
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
  // The rule above, read on the calling thread's current CPU.
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
