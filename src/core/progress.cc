#include "core/progress.h"

#include <fmt/format.h>
#include <sched.h>

#include "base/error.h"
#include "base/log.h"

namespace coral {

void Request::finish(coralResult_t rc, const std::string& err) {
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    result = rc;
    error = err;
  }
  cv.notify_all();
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
  cv_.wait(lock, [&] { return outstanding_ == 0; });
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

PeerMonitor::PeerMonitor(int rank, transport::Domain* const* domain_of, const std::vector<transport::Domain*>& polled,
                         double timeout_s, const char* what, int spin_polls, int pause, transport::Domain* cpu_gate)
    : rank_(rank), domain_of_(domain_of), polled_(polled), cpu_gate_(cpu_gate), timeout_s_(timeout_s), what_(what) {
  spin = spin_polls;
  pause_polls = pause;
  if (!polled_.empty()) sleep_slice_ns = 1000 * 1000;
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

void PeerMonitor::check(int peer) {
  if (deadline_ == Clock::time_point{})
    deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s_));
  transport::Domain* d = domain_of_[peer];
  std::string why = d->remote_abort();
  if (!why.empty()) fail(coralRemoteError, fmt::format("{} aborted: {}", what_, why));
  why = d->peer_failure(peer);
  if (!why.empty()) fail(coralRemoteError, fmt::format("{}: {} while rank {} waited for it", what_, why, rank_));
  if (Clock::now() > deadline_)
    fail(coralTimeout, fmt::format("{}: rank {} timed out after {} s waiting for rank {} "
                                   "(CORAL_TIMEOUT, or the communicator's timeoutSeconds)",
                                   what_, rank_, timeout_s_, peer));
}

}  // namespace coral
