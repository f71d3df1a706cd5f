// The waiting policy: spin briefly, then yield, then sleep on a futex in short slices, checking
// between slices for a failed peer, a communicator abort and the deadline. 8 ranks on 2 cores
// must not starve the rank they wait for.
#pragma once
#include <immintrin.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <ctime>
#include <utility>

namespace coral {

inline void futex_wake_all(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

inline void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, long nanos) {
  timespec ts{nanos / 1000000000L, nanos % 1000000000L};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

// Called between sleep slices; throws coral::Error when the wait must end (peer failed, abort,
// timeout). peer is the global rank waited on.
class WaitMonitor {
 public:
  virtual ~WaitMonitor() = default;
  virtual void check(int peer) = 0;
  // Moves the communicator's network transports other than `self` along. A rank waiting on one
  // transport must keep the others going: a peer's message may be stuck in our send queue, or
  // in a protocol (rendezvous, acknowledgements) that needs this side to answer.
  virtual void poll_others(const void* self) { (void)self; }
  // Gives the core away while waiting for `peer`, where that can help some rank run.
  virtual void yield_core(int peer) {
    (void)peer;
    sched_yield();
  }
  // The tag of the operation that waits (0: none). A transport that keeps several channels per
  // peer uses it to spot, on another channel, a message of a different operation: ranks called
  // different collectives, and the one awaited will never come.
  uint64_t tag = 0;
  // Where the executor publishes the schedule step it runs (the flight recorder's board), or null.
  std::atomic<uint32_t>* step_word = nullptr;
  int spin = 20000;                        // polls before sleeping on the futex
  int pause_polls = 1000;                  // of which the first ones only pause; later ones yield the core
  long sleep_slice_ns = 20 * 1000 * 1000;  // shorter when network transports need polling
  // A background wait (the progress thread's) polls briefly to leave the core to the caller's
  // computation. While callers block on the result instead (callers_waiting > 0) that core is
  // idle, and the wait polls as a foreground one: eager_spin and eager_pause_polls.
  const std::atomic<int>* callers_waiting = nullptr;
  int eager_spin = 0;
  int eager_pause_polls = 0;
  bool eager() const { return callers_waiting && callers_waiting->load(std::memory_order_relaxed) > 0; }
  int spin_now() const { return eager() ? eager_spin : spin; }
  int pause_now() const { return eager() ? eager_pause_polls : pause_polls; }
};

// Sets `at` to `value` for a scope (a monitor's setting for one kind of wait), then puts the old
// value back.
template <class T>
class Override {
 public:
  Override(T& at, T value) : at_(at), old_(std::exchange(at, value)) {}
  ~Override() { at_ = old_; }
  Override(const Override&) = delete;
  Override& operator=(const Override&) = delete;

 private:
  T& at_;
  T old_;
};

// Waits until ready() holds. word is the futex the other side bumps; sleeping counts the sides
// that may sleep on it, so the other side knows to wake them (both accesses seq_cst:
// Dekker-style). A count, not a flag: several ranks may share one (a poster's readers).
template <class Ready>
void wait_until(WaitMonitor& mon, int peer, std::atomic<uint32_t>& word, std::atomic<uint32_t>& sleeping, Ready ready) {
  if (ready()) return;
  const int spin = mon.spin_now(), pause_polls = mon.pause_now();
  for (int i = 0; i < spin; ++i) {
    if (ready()) return;
    if (i % 16 == 15) mon.poll_others(nullptr);
    if (i < pause_polls)
      _mm_pause();
    else
      mon.yield_core(peer);  // the peer we wait for may need this core
  }
  while (true) {
    uint32_t seen = word.load(std::memory_order_seq_cst);
    sleeping.fetch_add(1, std::memory_order_seq_cst);
    if (ready()) {
      sleeping.fetch_sub(1, std::memory_order_relaxed);
      return;
    }
    futex_wait(&word, seen, mon.sleep_slice_ns);
    sleeping.fetch_sub(1, std::memory_order_relaxed);
    if (ready()) return;
    mon.poll_others(nullptr);
    mon.check(peer);
  }
}

inline void wake_if_sleeping(std::atomic<uint32_t>& word, std::atomic<uint32_t>& sleeping) {
  if (sleeping.load(std::memory_order_seq_cst)) futex_wake_all(&word);
}

}  // namespace coral
