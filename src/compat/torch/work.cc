#include "compat/torch/work.h"

#include <ATen/core/ivalue.h>

#include <algorithm>
#include <stdexcept>

#include "compat/torch/convert.h"

namespace coral::torch_backend {

bool OpState::claim() {
  std::lock_guard<std::mutex> lock(mu);
  if (claimed) return false;
  claimed = true;
  return true;
}

void OpState::settle() {
  std::exception_ptr error;
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
  if (!error && finish) {
    try {
      finish();
    } catch (...) {
      error = std::current_exception();
    }
  }
  finish = nullptr;  // the buffers go now, not with the last reference to the state
  // The future first: a DDP comm hook chained on it must see the value when wait() returns.
  if (error)
    future->setError(error);
  else if (!future->completed())
    future->markCompleted(c10::IValue(outputs));
  std::lock_guard<std::mutex> lock(mu);
  if (work) work->done(error);
}

Completer::Completer() : thread_([this] { loop(); }) {}

Completer::~Completer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  // The last reference can go from a future's callback on this very thread.
  if (thread_.get_id() == std::this_thread::get_id())
    thread_.detach();
  else
    thread_.join();
}

void Completer::drain() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [&] { return queue_.empty() && !busy_; });
}

void Completer::add(std::shared_ptr<OpState> op) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(op));
  }
  cv_.notify_one();
}

void Completer::loop() {
  // One communicator's requests complete in issue order, so settling them in that order
  // completes each as soon as it is done.
  for (;;) {
    std::shared_ptr<OpState> op;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      op = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    op->settle();
    op.reset();
    std::lock_guard<std::mutex> lock(mu_);
    busy_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
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
