#include "compat/torch/work.h"

#include <ATen/core/ivalue.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <stdexcept>
#include <thread>
#include <vector>

#include "compat/torch/convert.h"

namespace coral::torch_backend {

bool OpState::claim() {
  std::lock_guard<std::mutex> lock(mu);
  if (claimed) return false;
  claimed = true;
  return true;
}

void OpState::end_request() {
  const bool waited = request != nullptr;
  if (waited) {
    if (in_coral) ++*in_coral;
    result = coralWait(request);
    request = nullptr;
  }
  // "Timed out" as gloo and NCCL say it: torch's own tests and users' scripts match on it.
  if (result != coralSuccess)
    error = std::make_exception_ptr(std::runtime_error(
        "coral: " + std::string(what) + " on rank " + std::to_string(rank) + " of " + std::to_string(size) +
        (result == coralTimeout ? " failed: Timed out waiting for the operation: " : " failed: ") +
        coral_error(comm, result)));
  if (waited && in_coral) --*in_coral;  // done with the communicator
  if (p2p_pending) --*p2p_pending;
  p2p_pending = nullptr;
  if (!error && finish) {
    try {
      // The results are data, not a step of the caller's graph: a leaf that requires grad (an
      // nn.Parameter broadcast into) must take them, on whichever thread settles.
      c10::NoGradGuard no_grad;
      finish();
    } catch (...) {
      error = std::current_exception();
    }
  }
  finish = nullptr;  // the buffers go now, not with the last reference to the state
}

void OpState::publish() {
  // The future first: a DDP comm hook chained on it must see the value when wait() returns.
  if (error)
    future->setError(error);
  else if (!future->completed())
    future->markCompleted(c10::IValue(outputs));
  std::lock_guard<std::mutex> lock(mu);
  if (work) work->done(error);
}

struct Completer::Pool : std::enable_shared_from_this<Pool> {
  std::mutex mu;
  std::condition_variable wake, idle;
  std::deque<std::shared_ptr<OpState>> queue;
  bool taking = false;  // a thread is in the oldest request's wait
  int waiting = 0;      // threads with nothing to do
  int starting = 0;     // threads made that have not yet looked at the queue
  int busy = 0;         // threads settling a request
  bool stopping = false;
  std::vector<std::thread> threads;

  // Another thread for the queue, under mu: an idle one, else a new one. Once stopping, the
  // Completer may be gone, with no one left to join it: a new one is detached.
  void hand_on() {
    if (waiting + starting > 0) {  // (a starting one looks at the queue before it sleeps)
      wake.notify_one();
      return;
    }
    ++starting;
    std::thread t([self = shared_from_this()] { self->loop(); });
    if (stopping)
      t.detach();
    else
      threads.push_back(std::move(t));
  }

  void loop() {
    std::unique_lock<std::mutex> lock(mu);
    --starting;
    for (;;) {
      ++waiting;
      wake.wait(lock, [&] { return (!queue.empty() && !taking) || (stopping && queue.empty()); });
      --waiting;
      if (queue.empty()) return;
      // One communicator's requests complete in issue order, so waiting for them in that order
      // ends each wait as soon as its request is done.
      std::shared_ptr<OpState> op = std::move(queue.front());
      queue.pop_front();
      if (stopping && queue.empty()) wake.notify_all();  // the others may leave now
      taking = true;
      ++busy;
      lock.unlock();
      op->end_request();
      lock.lock();
      taking = false;
      if (!queue.empty()) hand_on();
      lock.unlock();
      op->publish();
      op.reset();
      lock.lock();
      if (--busy == 0 && queue.empty()) idle.notify_all();
    }
  }
};

Completer::Completer() : pool_(std::make_shared<Pool>()) {
  std::lock_guard<std::mutex> lock(pool_->mu);
  pool_->hand_on();
}

Completer::~Completer() {
  Pool& p = *pool_;
  {
    std::lock_guard<std::mutex> lock(p.mu);
    p.stopping = true;
  }
  p.wake.notify_all();
  // Threads may still start (a request's wait handing on): take them one by one. The last
  // reference can go from a future's callback on one of them: that one is left to finish.
  for (size_t i = 0;; i++) {
    std::thread t;
    {
      std::lock_guard<std::mutex> lock(p.mu);
      if (i == p.threads.size()) break;
      t = std::move(p.threads[i]);
    }
    if (t.get_id() == std::this_thread::get_id())
      t.detach();
    else
      t.join();
  }
}

void Completer::drain() {
  Pool& p = *pool_;
  std::unique_lock<std::mutex> lock(p.mu);
  p.idle.wait(lock, [&] { return p.queue.empty() && p.busy == 0; });
}

void Completer::add(std::shared_ptr<OpState> op) {
  Pool& p = *pool_;
  std::lock_guard<std::mutex> lock(p.mu);
  p.queue.push_back(std::move(op));
  // A thread in a wait takes it next; else every thread may be in a callback that waits for it.
  if (!p.taking) p.hand_on();
}

WorkCoral::WorkCoral(int rank, ::c10d::OpType type, const char* title, const c10::optional<Tensors>& inputs,
                     Tensors outputs, std::shared_ptr<OpState> op, std::shared_ptr<Completer> completer)
    : ::c10d::Work(rank, type, title, inputs),
      outputs_(std::move(outputs)),
      op_(std::move(op)),
      completer_(std::move(completer)) {
  op_->work = this;
}

WorkCoral::~WorkCoral() {
  {
    std::lock_guard<std::mutex> lock(op_->mu);
    op_->work = nullptr;
  }
  // Dropped unwaited (a blocking call's work is always waited): its request still completes.
  if (op_->claim()) completer_->add(op_);
}

bool WorkCoral::isCompleted() {
  if (::c10d::Work::isCompleted()) return true;
  if (!op_->claim()) return false;
  if (op_->request) {
    int ready = 0;
    const coralResult_t r = coralTest(op_->request, &ready);
    if (r == coralSuccess && !ready) {
      std::lock_guard<std::mutex> lock(op_->mu);
      op_->claimed = false;
      return false;
    }
    op_->request = nullptr;  // done or failed, coralTest freed it either way
    op_->result = r;
  }
  op_->settle();
  return ::c10d::Work::isCompleted();
}

bool WorkCoral::wait(std::chrono::milliseconds timeout) {
  if (op_->deferred) return true;
  // A bounded wait cannot block in coralWait: the completion thread settles and we wait on it.
  if (timeout.count() == 0) {  // torch's kNoTimeout
    if (op_->claim()) op_->settle();
  } else if (op_->claim()) {
    completer_->add(op_);
  }
  const bool r = ::c10d::Work::wait(timeout);
  synchronize();
  return r;
}

void WorkCoral::synchronize() {
  // As ProcessGroupNCCL's: the caller's current streams wait for a stream-ordered result (the
  // future's CUDA events, recorded on the stream that issued it), so a wait on another stream is
  // safe. Host operations have no devices.
  const auto& f = op_->future;
  if (!f->devices().empty() && f->completed() && !f->hasError()) f->wait();
}

c10::intrusive_ptr<c10::ivalue::Future> WorkCoral::getFuture() {
  if (op_->claim()) completer_->add(op_);
  return op_->future;
}

#if TORCH_VERSION_MAJOR >= 2
WorkCoalesced::WorkCoalesced(int rank, std::vector<c10::intrusive_ptr<::c10d::Work>> works)
    : ::c10d::Work(rank, ::c10d::OpType::COALESCED, "coral:coalesced"), works_(std::move(works)) {}

void WorkCoalesced::done(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    finished_ = true;
  }
  finish(error);
}

bool WorkCoalesced::isCompleted() {
  if (::c10d::Work::isCompleted()) return true;
  std::exception_ptr error;
  for (auto& w : works_) {
    if (!w->isCompleted()) return false;
    if (!error) error = w->exception();
  }
  done(error);
  return true;
}

bool WorkCoalesced::wait(std::chrono::milliseconds timeout) {
  using std::chrono::milliseconds;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (auto& w : works_) {
    // One timeout for the block, not one per member; 0 is torch's "no timeout".
    milliseconds left = timeout;
    if (timeout.count() != 0)
      left = std::max(milliseconds(1),
                      std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now()));
    try {
      w->wait(left);
    } catch (...) {
      // A member that failed fails the block; one still running (the wait timed out) does not.
      if (w->isCompleted()) done(std::current_exception());
      throw;
    }
  }
  done(nullptr);
  return true;
}

std::vector<at::Tensor> WorkCoalesced::result() {
  std::vector<at::Tensor> all;
  for (auto& w : works_)
    for (auto& t : w->result()) all.push_back(t);
  return all;
}

c10::intrusive_ptr<c10::ivalue::Future> WorkCoalesced::getFuture() {
  std::lock_guard<std::mutex> lock(mu_);
  if (future_) return future_;
  std::vector<c10::intrusive_ptr<c10::ivalue::Future>> parts;
  std::vector<c10::Device> devices;
  for (auto& w : works_) {
    parts.push_back(w->getFuture());
    for (const auto& d : parts.back()->devices())
      if (std::find(devices.begin(), devices.end(), d) == devices.end()) devices.push_back(d);
  }
  static const c10::TypePtr list_of_tensors = c10::ListType::create(c10::TensorType::get());
  future_ = c10::make_intrusive<c10::ivalue::Future>(list_of_tensors, devices);
  // The block's future completes with the last of its parts, with every output (or the first
  // failure among them).
  struct Pending {
    std::mutex mu;
    size_t left;
    std::exception_ptr error;
  };
  auto pending = std::make_shared<Pending>();
  pending->left = parts.size();
  auto future = future_;
  auto outputs = std::make_shared<std::vector<at::Tensor>>(result());
  if (parts.empty()) future->markCompleted(c10::IValue(*outputs));
  for (auto& part : parts)
    part->addCallback([pending, future, outputs](c10::ivalue::Future& f) {
      std::exception_ptr error;
      {
        std::lock_guard<std::mutex> lock(pending->mu);
        if (f.hasError() && !pending->error) pending->error = f.exception_ptr();
        if (--pending->left > 0) return;
        error = pending->error;
      }
      if (error)
        future->setError(error);
      else
        future->markCompleted(c10::IValue(*outputs));
    });
  return future_;
}
#endif

}  // namespace coral::torch_backend
