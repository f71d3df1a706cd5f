// torch.distributed backend "coral": a c10d process group over Coral's public C API only.
// One source for torch 1.13 (a ProcessGroup subclass) and torch >= 2 (a Backend subclass).
#pragma once
#include <coral/coral.h>
#include <torch/version.h>

#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include "compat/torch/work.h"

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#define CORAL_TORCH_BASE ::c10d::Backend
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#define CORAL_TORCH_BASE ::c10d::ProcessGroup
#endif

namespace coral::torch_backend {

class ProcessGroupCoral : public CORAL_TORCH_BASE {
 public:
  ProcessGroupCoral(const c10::intrusive_ptr<::c10d::Store>& store, int rank, int size,
                    std::chrono::milliseconds timeout);
  // Adopts comm, a communicator made from another group's (a shrink): rank and size are comm's.
  ProcessGroupCoral(coralComm_t comm, const c10::intrusive_ptr<::c10d::Store>& store, std::string nonce,
                    std::chrono::milliseconds timeout);
  ~ProcessGroupCoral() override;

  const std::string getBackendName() const override { return "coral"; }

  c10::intrusive_ptr<::c10d::Work> broadcast(Tensors& tensors, const ::c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> allreduce(Tensors& tensors, const ::c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> allreduce_coalesced(Tensors& tensors,
                                                       const ::c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> reduce(Tensors& tensors, const ::c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> allgather(std::vector<Tensors>& outputs, Tensors& inputs,
                                             const ::c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                   const ::c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> allgather_coalesced(std::vector<Tensors>& outputs, Tensors& inputs,
                                                       const ::c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> gather(std::vector<Tensors>& outputs, Tensors& inputs,
                                          const ::c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> scatter(Tensors& outputs, std::vector<Tensors>& inputs,
                                           const ::c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> reduce_scatter(Tensors& outputs, std::vector<Tensors>& inputs,
                                                  const ::c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                        const ::c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                                 std::vector<int64_t>& outputSplits, std::vector<int64_t>& inputSplits,
                                                 const ::c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> alltoall(Tensors& outputs, Tensors& inputs,
                                            const ::c10d::AllToAllOptions& opts) override;
#if TORCH_VERSION_MAJOR >= 2
  c10::intrusive_ptr<::c10d::Work> allgather_into_tensor_coalesced(Tensors& outputs, Tensors& inputs,
                                                                   const ::c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> reduce_scatter_tensor_coalesced(Tensors& outputs, Tensors& inputs,
                                                                   const ::c10d::ReduceScatterOptions& opts) override;
#endif
  c10::intrusive_ptr<::c10d::Work> send(Tensors& tensors, int dst, int tag) override;
  c10::intrusive_ptr<::c10d::Work> recv(Tensors& tensors, int src, int tag) override;
  c10::intrusive_ptr<::c10d::Work> recvAnysource(Tensors& tensors, int tag) override;
  c10::intrusive_ptr<::c10d::Work> barrier(const ::c10d::BarrierOptions& opts) override;
  void monitoredBarrier(const ::c10d::BarrierOptions& opts, bool waitAllRanks) override;
#if TORCH_VERSION_MAJOR >= 2
  // torch's _coalescing_manager(group, device): batch_isend_irecv on CUDA, and on any device once
  // the backend says it coalesces (torch >= 2.7 asks). One work covers the block; its CUDA
  // operations run as one Coral group, so sends and receives may come in any order.
  void startCoalescing() override;
  c10::intrusive_ptr<::c10d::Work> endCoalescing() override;
#ifdef CORAL_TORCH_BACKEND_COALESCING
  bool supportsCoalescing() const override { return true; }
#endif
#ifdef CORAL_TORCH_BACKEND_ABORT
  // torch's _abort_process_group (2.14): every rank's pending calls on the group end at once, as
  // with ncclCommAbort, from any thread; the communicator itself goes with the group.
  void abort() override;
#endif
#ifdef CORAL_TORCH_BACKEND_TIMEOUT
  // dist.set_timeout: the group's operations from now on (and its later splits) wait that long.
  void setTimeout(std::chrono::milliseconds timeout) override;
#endif
#ifdef CORAL_TORCH_BACKEND_SHRINKING
  // dist.shrink_group: the survivors of a failed group (or any members) go on without the excluded ranks.
  bool supportsShrinking() const override { return true; }
  c10::intrusive_ptr<::c10d::Backend> shrink(const std::vector<int64_t>& ranks_to_exclude, int shrink_flags,
                                             const c10::intrusive_ptr<Options>& opts_override) override;
#endif
#ifdef CORAL_TORCH_BACKEND_TIME_ESTIMATION
  // torch's _time_estimator(group, device): the thread's calls in between, on any coral group, are
  // priced by Coral's cost model and not run (coralGroupEstimate), as ProcessGroupNCCL prices
  // them with ncclGroupSimulateEnd. The estimate is in microseconds, as NCCL's.
  bool supportsTimeEstimation() const override { return true; }
  void start_time_estimate();
  float end_time_estimate();
#endif
#endif

  // torch's desync checks compare these across ranks; every rank issues the same collectives in
  // the same order (point-to-point calls are not counted, as with NCCL). torch 1.13 asks for a
  // start at group creation: 0 on every rank; torch 2 deprecated that call.
  void setSequenceNumberForGroup() override {}
  uint64_t getSequenceNumberForGroup() override { return seq_; }

  coralComm_t comm() const { return comm_; }

 private:
  // One Coral operation (profiled: the inputs the profiler records, sample alone by default): issue() starts it on host
  // buffers (given a request to fill) or, given none, enqueues it stream-ordered on the stream (NULL: the default).
  using Issue = std::function<coralResult_t(void* stream, coralRequest_t* request)>;
  c10::intrusive_ptr<::c10d::Work> run(::c10d::OpType type, const char* what, const Tensors& outputs,
                                       const at::Tensor& sample, const Issue& issue, Finish finish = {},
                                       const Tensors& profiled = {});
  [[noreturn]] void fail(const char* what, coralResult_t r) const;
  // The state of one operation's work, its future on devices.
  std::shared_ptr<OpState> new_op(const char* what, const Tensors& outputs, const std::vector<c10::Device>& devices,
                                  Finish finish);
  // run() inside a time estimate.
  c10::intrusive_ptr<::c10d::Work> priced(::c10d::OpType type, const char* what, const Tensors& outputs,
                                          const at::Tensor& sample, const Issue& issue);

  coralComm_t comm_ = nullptr;
  std::atomic<uint64_t> seq_{0};
  std::chrono::milliseconds timeout_;
  c10::intrusive_ptr<::c10d::Store> store_;  // the group's own (prefixed) store
  std::string nonce_;                        // this group's, from its unique id
  std::atomic<uint64_t> monitored_{0};       // monitored barriers so far
  int shrinks_ = 0;                          // groups shrunk from this one
  std::shared_ptr<Completer> completer_;
  std::shared_ptr<std::atomic<int>> in_coral_ = std::make_shared<std::atomic<int>>(0);     // OpState::in_coral
  std::shared_ptr<std::atomic<int>> p2p_pending_ = std::make_shared<std::atomic<int>>(0);  // OpState::p2p_pending
  // Requests not yet claimed, oldest first: the teardown settles them before the communicator goes.
  std::mutex live_mu_;
  std::deque<std::weak_ptr<OpState>> live_;
  // A coalesced block, from startCoalescing to endCoalescing on the thread that opened it (torch's
  // context manager runs on one thread; a watchdog's abort opens a block of its own). Only that
  // thread touches it.
  struct Coalescing {
    bool group_open = false;  // a CUDA operation opened the Coral group
    bool host = false;        // a host operation joined
    std::vector<c10::intrusive_ptr<::c10d::Work>> works;
    // The CUDA operations deferred to the group, each settled on the stream it was issued on
    // (with the group's result).
    std::vector<std::function<void(coralResult_t)>> deferred;
  };
  Coalescing* my_block();                  // this thread's open block, or null
  std::optional<Coalescing> take_block();  // removes this thread's block
  coralResult_t close_block(Coalescing& block);
  std::mutex blocks_mu_;
  std::unordered_map<std::thread::id, Coalescing> blocks_;
  std::atomic<int> open_blocks_{0};  // keeps calls outside any block off blocks_mu_
};

}  // namespace coral::torch_backend
