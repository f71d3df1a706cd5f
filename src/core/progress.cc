#include "core/progress.h"

#include <fmt/format.h>
#include <sched.h>

#include "base/error.h"
#include "base/log.h"

namespace coral {

namespace {

// Thread-local: the progress thread never has one, so a hook only ever runs on the thread that
// set it, inside that thread's own blocking call (an MPI library's thread rules allow that).
struct WaitHook {
  void (*fn)(void*) = nullptr;
  void* arg = nullptr;
  bool running = false;
};
thread_local WaitHook t_hook;

}  // namespace

void set_wait_hook(void (*fn)(void*), void* arg) {
  t_hook.fn = fn;
  t_hook.arg = arg;
}

void run_wait_hook() {
  if (!t_hook.fn || t_hook.running) return;
  t_hook.running = true;
  struct Reset {
    ~Reset() { t_hook.running = false; }
  } reset;
  t_hook.fn(t_hook.arg);
}

void Request::finish(coralResult_t rc, const std::string& err) {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (done) return;  // finished early (gpu_group.cc): its caller has seen that result
    done = true;
    result = rc;
    error = err;
  }
  cv.notify_all();
  // Seen after `done` was set under mu: a waiter that missed it had already counted itself.
  AnyWaiters& any = any_waiters();
  if (any.count.load() > 0) {
    {
      std::lock_guard<std::mutex> lock(any.mu);
      ++any.epoch;
    }
    any.cv.notify_all();
  }
}

void Request::wait_ok() {
  wait_done();
  std::lock_guard<std::mutex> lock(mu);
  if (result != coralSuccess) fail(result, error);
}

AnyWaiters& any_waiters() {
  static AnyWaiters& a = *new AnyWaiters;  // never destroyed: a static communicator may outlive it
  return a;
}

int wait_any(const std::shared_ptr<Request>* const* reqs, size_t n) {
  AnyWaiters& any = any_waiters();
  // Counted before looking, so a request finishing after our look bumps the epoch we hold.
  any.count.fetch_add(1);
  for (size_t i = 0; i < n; i++)
    if (reqs[i] && (*reqs[i])->callers_waiting) (*reqs[i])->callers_waiting->fetch_add(1, std::memory_order_relaxed);
  int found = -1;
  for (;;) {
    uint64_t seen;
    {
      std::lock_guard<std::mutex> lock(any.mu);
      seen = any.epoch;
    }
    bool any_live = false;
    for (size_t i = 0; i < n && found < 0; i++) {
      if (!reqs[i]) continue;
      any_live = true;
      std::lock_guard<std::mutex> lock((*reqs[i])->mu);
      if ((*reqs[i])->done) found = static_cast<int>(i);
    }
    if (found >= 0 || !any_live) break;
    std::unique_lock<std::mutex> lock(any.mu);
    any.cv.wait(lock, [&] { return any.epoch != seen; });
  }
  for (size_t i = 0; i < n; i++)
    if (reqs[i] && (*reqs[i])->callers_waiting) (*reqs[i])->callers_waiting->fetch_sub(1, std::memory_order_relaxed);
  any.count.fetch_sub(1);
  return found;
}

ProgressQueue::~ProgressQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ProgressQueue::submit(std::shared_ptr<Request> req, const std::function<void()>& before) {
  std::lock_guard<std::mutex> lock(mu_);
  if (before) before();
  if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  queue_.push_back(std::move(req));
  outstanding_.fetch_add(1, std::memory_order_relaxed);
  cv_.notify_all();
}

void ProgressQueue::wait_idle() {
  if (outstanding_.load(std::memory_order_acquire) == 0) return;
  std::unique_lock<std::mutex> lock(mu_);
  auto idle = [&] { return outstanding_ == 0; };
  if (!t_hook.fn) {
    cv_.wait(lock, idle);
    return;
  }
  // The queued requests may need a peer that first needs the hook's runtime on this rank (a
  // blocking call behind an MPI_Iallreduce, with an MPI send posted between them).
  while (!cv_.wait_for(lock, std::chrono::milliseconds(1), idle)) {
    lock.unlock();
    run_wait_hook();
    lock.lock();
  }
}

std::shared_ptr<Request> ProgressQueue::take_front_if(const std::function<bool(const Request&)>& want) {
  std::lock_guard<std::mutex> lock(mu_);
  if (queue_.empty() || !want(*queue_.front())) return nullptr;
  std::shared_ptr<Request> req = std::move(queue_.front());
  queue_.pop_front();
  return req;
}

void ProgressQueue::adopted_done() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    outstanding_.fetch_sub(1, std::memory_order_release);
  }
  cv_.notify_all();
}

void ProgressQueue::loop() {
  log::set_thread_rank(rank_);
  while (true) {
    std::shared_ptr<Request> req;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left to run
      req = std::move(queue_.front());
      queue_.pop_front();
    }
    run_(req);
    {
      std::lock_guard<std::mutex> lock(mu_);
      outstanding_.fetch_sub(1, std::memory_order_release);
    }
    cv_.notify_all();
  }
}

void Request::wait_done() {
  std::unique_lock<std::mutex> lock(mu);
  if (done) return;
  if (callers_waiting) callers_waiting->fetch_add(1, std::memory_order_relaxed);
  cv.wait(lock, [&] { return done; });
  if (callers_waiting) callers_waiting->fetch_sub(1, std::memory_order_relaxed);
}

bool Request::wait_done_for(std::chrono::microseconds limit) {
  std::unique_lock<std::mutex> lock(mu);
  if (done) return true;
  if (callers_waiting) callers_waiting->fetch_add(1, std::memory_order_relaxed);
  const bool finished = cv.wait_for(lock, limit, [&] { return done; });
  if (callers_waiting) callers_waiting->fetch_sub(1, std::memory_order_relaxed);
  return finished;
}

PeerMonitor::PeerMonitor(int rank, transport::Domain* const* domain_of, const std::vector<transport::Domain*>& polled,
                         double timeout_s, int spin_polls, int pause, transport::Domain* cpu_gate,
                         const FlightPeers& flight, const std::function<void()>* usable)
    : rank_(rank),
      domain_of_(domain_of),
      polled_(polled),
      cpu_gate_(cpu_gate),
      timeout_s_(timeout_s),
      flight_(flight),
      usable_(usable) {
  spin = spin_polls;
  pause_polls = pause;
  if (!polled_.empty()) sleep_slice_ns = 1000 * 1000;
  step_word = &flight_.recorder->board().step;
}

void PeerMonitor::poll_others(const void* self) {
  for (transport::Domain* d : polled_)
    if (d != self) d->advance();
}

void PeerMonitor::yield_core(int peer) {
  if (cpu_gate_)
    cpu_gate_->give_way(peer);
  else
    sched_yield();
}

std::string PeerMonitor::label() const {
  const FlightBoard& b = flight_.recorder->board();
  return op_label(b.kind.load(std::memory_order_relaxed), b.number.load(std::memory_order_relaxed));
}

void PeerMonitor::check(int peer) {
  run_wait_hook();
  const auto now = Clock::now();
  if (deadline_ == Clock::time_point{}) {
    deadline_ = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s_));
    // Ranks on other hosts learn what this one waits for from the store, once its wait is long.
    publish_at_ =
        now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::min(1.0, timeout_s_ / 4)));
  }
  flight_.recorder->waiting_on(peer);
  if (flight_.publish && !published_ && now > publish_at_) {
    published_ = true;
    flight_.publish();
  }
  if (usable_) (*usable_)();
  transport::Domain* d = domain_of_[peer];
  std::string why = d->remote_abort();
  if (!why.empty()) fail(coralRemoteError, fmt::format("{} aborted: {}", label(), why));
  why = d->peer_failure(peer);
  if (!why.empty()) fail(coralRemoteError, fmt::format("{}: {} while rank {} waited for it", label(), why, rank_));
  if (flight_.read_local && now > publish_at_ && now > peek_at_) {
    // A long wait on a peer that has finished this very call with other arguments (a count of 0
    // where this rank passed 4, say: it sent nothing) ends now, not at the timeout. Only a peer
    // on this host is looked at: another's board is a store read, which would stall the wait.
    peek_at_ = now + std::chrono::seconds(1);
    const std::string d = disagreement(flight_.read_local(rank_), peer, flight_.read_local(peer));
    if (!d.empty()) fail(coralInvalidUsage, d);
  }
  if (now <= deadline_) return;
  if (flight_.publish) flight_.publish();
  const FlightStatus mine = flight_.read(rank_);
  fail(coralTimeout, fmt::format("{} timed out: {} (CORAL_TIMEOUT, or the communicator's timeoutSeconds)",
                                 op_detail(mine), explain_wait(rank_, mine, peer, timeout_s_, flight_.read)));
}

}  // namespace coral
