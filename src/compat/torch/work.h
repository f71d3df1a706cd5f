// A returned Work and the completion of its Coral request. The caller that waits runs the
// request to completion on its own thread (no hand-off: an 8-byte all-reduce's time is mostly
// thread wake-ups); a future asked for, or a work dropped unwaited, goes to the completion
// thread instead, so DDP's futures complete even after the work itself is gone.
#pragma once
#include <c10/util/Optional.h>  // c10::optional: a class of its own in 1.13, std::optional's alias in 2.x
#include <coral/coral.h>
#include <torch/version.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>

namespace coral::torch_backend {

using Tensors = std::vector<at::Tensor>;
// What an operation needs after Coral finishes it: copy results back into the caller's
// (non-contiguous, listed or coalesced) tensors. Holds the buffers alive until then.
using Finish = std::function<void()>;

class WorkCoral;

// One issued request. Exactly one party claims it (the waiting caller, the completion thread or
// the group's teardown) and settles it: waits, finishes, completes the future and the work.
struct OpState {
  std::mutex mu;
  coralRequest_t request = nullptr;  // null: nothing left to wait for, result says how it ended
  coralResult_t result = coralSuccess;
  coralComm_t comm = nullptr;
  const char* what = "";  // a literal, formatted only on failure
  int rank = 0, size = 0;
  Finish finish;
  c10::intrusive_ptr<c10::ivalue::Future> future;
  Tensors outputs;            // the future's value
  WorkCoral* work = nullptr;  // cleared by ~WorkCoral, under mu
  bool claimed = false;
  // A CUDA call inside a coalesced block, waiting for the block's end to be queued (its waits
  // return at once meanwhile, as NCCL's calls inside a group do).
  std::atomic<bool> deferred{false};
  // The group's count of settles still inside Coral calls on its communicator: the group's
  // teardown waits for them (a watchdog's abort drops the group while a caller still waits).
  std::shared_ptr<std::atomic<int>> in_coral;
  // A send or receive: the group's count of those not yet ended, which its teardown gives up on.
  std::shared_ptr<std::atomic<int>> p2p_pending;

  std::exception_ptr error;  // how it ended, between the two halves of settle

  bool claim();
  bool is_claimed() {
    std::lock_guard<std::mutex> lock(mu);
    return claimed;
  }
  void settle() {
    end_request();
    publish();
  }
  // The halves of settle: waits for the request and copies results back; then completes the
  // future (running its callbacks, which may block) and the work.
  void end_request();
  void publish();
};

// Settles the requests handed to it, oldest first, one at a time. A future's callbacks run on
// the thread that completes it and may block on another call of the same group (PowerSGD's
// hook waits, inside its callback, on an all-reduce it issues there), so the thread that
// completed a request's wait hands the queue to another thread (an idle one, else a new one)
// before it runs them. In plain DDP that settles at two threads.
class Completer {
 public:
  Completer();
  ~Completer();  // drains what it was given, then stops
  void add(std::shared_ptr<OpState> op);
  // Returns once everything given so far is settled.
  void drain();

 private:
  struct Pool;
  std::shared_ptr<Pool> pool_;  // shared with its threads: a callback may drop the last Completer
};

class WorkCoral : public ::c10d::Work {
 public:
  // title: the profiler's name for the call ("coral:all_reduce"), recorded by torch's Work.
  WorkCoral(int rank, ::c10d::OpType type, const char* title, const c10::optional<Tensors>& inputs, Tensors outputs,
            std::shared_ptr<OpState> op, std::shared_ptr<Completer> completer);
  ~WorkCoral() override;
  bool isCompleted() override;
  bool wait(std::chrono::milliseconds timeout) override;
  void synchronize() override;
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  // Marks the work done (error null) or failed; called by OpState::settle.
  void done(std::exception_ptr error) { finish(error); }
  // A receive's work says whom it received from (Work.source_rank(), as gloo's does).
  void set_source(int rank) { source_ = rank; }
  int sourceRank() const override { return source_ >= 0 ? source_ : ::c10d::Work::sourceRank(); }

 private:
  int source_ = -1;
  Tensors outputs_;
  std::shared_ptr<OpState> op_;
  std::shared_ptr<Completer> completer_;
};

#if TORCH_VERSION_MAJOR >= 2
// The one work of a coalesced block (endCoalescing): done when every operation in it is, failed
// with the first failure among them.
class WorkCoalesced : public ::c10d::Work {
 public:
  WorkCoalesced(int rank, std::vector<c10::intrusive_ptr<::c10d::Work>> works);
  bool isCompleted() override;
  bool wait(std::chrono::milliseconds timeout) override;
  std::vector<at::Tensor> result() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

 private:
  void done(std::exception_ptr error);
  std::vector<c10::intrusive_ptr<::c10d::Work>> works_;
  std::mutex mu_;
  bool finished_ = false;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};
#endif

}  // namespace coral::torch_backend
