// Progress: the queue of non-blocking and stream-ordered requests with the thread that runs
// them, and the monitor every wait of an operation consults (peer failures, aborts, timeout).
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/wait.h"
#include "collectives/schedule.h"
#include "core/flight.h"
#include "transport/transport.h"

namespace coral {

namespace gpu {
class Event;
}

// A PreMulSum op's scalar as a call uses it (args.op is then coralSum).
struct Premul {
  bool on = false;
  bool device_scalar = false;  // ptr is device memory, read when the call runs
  const void* ptr = nullptr;
  alignas(8) unsigned char value[8] = {};  // the host-immediate scalar, copied at creation
};

struct Call {
  collectives::CollArgs args;  // rank/nranks/chunk are filled by the communicator
  const void* send = nullptr;
  void* recv = nullptr;
  Premul premul;
  bool device = false;  // point-to-point calls of a stream-ordered batch: the buffer is on the GPU
};

inline bool is_p2p(const Call& c) {
  return c.args.coll == collectives::Coll::Send || c.args.coll == collectives::Coll::Recv;
}

inline Call make_call(collectives::Coll coll, const void* send, void* recv, size_t count, coralDataType_t dtype,
                      coralRedOp_t op, int root) {
  Call c;
  c.args.coll = coll;
  c.args.count = count;
  c.args.dtype = dtype;
  c.args.op = op;
  c.args.root = root;
  c.send = send;
  c.recv = recv;
  return c;
}

struct Request {
  Call call;
  // A group (coralGroupStart/End): its calls, run in order with the point-to-point ones together;
  // call is unused then.
  std::vector<Call> group;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  coralResult_t result = coralSuccess;
  std::string error;
  // Stream-ordered calls: the caller's stream work this call waits for, and the number the
  // caller's stream waits to see in GpuState::flag.
  std::shared_ptr<gpu::Event> ready;
  bool device = false;  // buffers are device memory
  uint64_t seq = 0;
  // Stream-ordered sends and receives: pinned room for the device sends, then the device
  // receives (core/gpu_group.cc).
  std::shared_ptr<std::byte> staging;
  std::atomic<int>* callers_waiting = nullptr;  // the communicator's, counted by whoever waits

  // Sets the result and wakes the waiters; the first call's result stands.
  void finish(coralResult_t rc, const std::string& err);
  // Blocks until finish(), counted in callers_waiting meanwhile.
  void wait_done();
  // As wait_done(), for at most `limit`; true once finished.
  bool wait_done_for(std::chrono::microseconds limit);
  // wait_done(), then throws the operation's failure.
  void wait_ok();
};

// Callers of coralWaitAny, who wait for any one of several requests (of any communicators),
// sleep here; finish() wakes them only while there are some.
struct AnyWaiters {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t epoch = 0;  // bumped, under mu, by each finish() that saw waiters
  std::atomic<int> count{0};
};
AnyWaiters& any_waiters();
// Blocks until one of reqs (null entries skipped) has finished; returns its index, or -1 if
// every entry is null.
int wait_any(const std::shared_ptr<Request>* const* reqs, size_t n);

// One progress thread per communicator, started by the first request: requests run in
// submission order, each through `run`, which must finish() the request.
class ProgressQueue {
 public:
  using Runner = std::function<void(std::shared_ptr<Request>&)>;
  ProgressQueue(int rank, Runner run) : rank_(rank), run_(std::move(run)) {}
  // Runs what is queued, then joins the thread.
  ~ProgressQueue();
  // `before` runs under the queue's lock, just before the request is queued (stream-ordered
  // calls number themselves there, in queue order).
  void submit(std::shared_ptr<Request> req, const std::function<void()>& before = {});
  // Returns once every queued request has finished.
  void wait_idle();
  // For the runner: pops the next queued request if `want` accepts it (nullptr otherwise); the
  // runner then owes an adopted_done() once it has finished that request.
  std::shared_ptr<Request> take_front_if(const std::function<bool(const Request&)>& want);
  void adopted_done();
  // The queue's lock, for state the caller guards with it.
  std::mutex& mutex() { return mu_; }

 private:
  void loop();

  int rank_;
  Runner run_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Request>> queue_;
  bool stopping_ = false;
  // Queued or running requests. Changed under mu_; wait_idle() reads it without the lock first,
  // and the decrement follows the request's end, so seeing 0 sees its effects.
  std::atomic<uint64_t> outstanding_{0};
  std::thread thread_;
};

// The calling thread's wait hook (coralSetWaitHook): run between the sleep slices of that
// thread's own waits, never while it runs already.
void set_wait_hook(void (*fn)(void*), void* arg);
void run_wait_hook();

// The monitor of one operation's waits: a peer's failure or abort, and CORAL_TIMEOUT, end it
// with an error naming the operation, this rank and the peer.
class PeerMonitor : public WaitMonitor {
 public:
  // domain_of: per rank, the domain of its link; polled: domains a wait must keep going;
  // cpu_gate: the domain that knows whether the awaited rank runs elsewhere (may be null).
  // flight: the communicator's recorder and boards, which name the operation in errors, say
  // what the awaited ranks do on a timeout, and get the op's steps (WaitMonitor::step_word).
  // usable: throws once the communicator has failed (coralCommRevoke on another thread), so a
  // wait ends even when no peer is in a call to echo the abort back (may be null).
  PeerMonitor(int rank, transport::Domain* const* domain_of, const std::vector<transport::Domain*>& polled,
              double timeout_s, int spin_polls, int pause, transport::Domain* cpu_gate, const FlightPeers& flight,
              const std::function<void()>* usable = nullptr);
  // True once a wait of this op slept long enough to publish its status to the store.
  bool published() const { return published_; }
  void poll_others(const void* self) override;
  void yield_core(int peer) override;
  // Only called once a wait has gone to sleep, so the clock is read off the fast path: the
  // timeout counts from the first sleep of this operation.
  void check(int peer) override;

 private:
  using Clock = std::chrono::steady_clock;
  int rank_;
  transport::Domain* const* domain_of_;
  const std::vector<transport::Domain*>& polled_;
  transport::Domain* cpu_gate_;
  Clock::time_point deadline_{}, publish_at_{}, peek_at_{};
  double timeout_s_;
  const FlightPeers& flight_;
  const std::function<void()>* usable_;
  bool published_ = false;
  // The op's name for an error: "allreduce #12".
  std::string label() const;
};

}  // namespace coral
