#include "compat/torch/process_group.h"

#include <ATen/core/ivalue.h>
#include <c10/util/Exception.h>

#include <pybind11/pybind11.h>

#include <cstring>
#include <optional>

#include "compat/torch/convert.h"

#ifdef CORAL_TORCH_CUDA
// Not ATen/cuda/CUDAContext.h: it wants cuBLAS/cuSPARSE/cuSOLVER headers a bare toolkit lacks.
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace coral::torch_backend {

namespace {

// The profiler's event names, as gloo's and NCCL's ("gloo:all_reduce", "nccl:_all_gather_base").
const char* profiling_title(const char* what) {
  static const std::pair<const char*, const char*> titles[] = {
      {"allreduce", "coral:all_reduce"},
      {"allreduce_coalesced", "coral:all_reduce"},
      {"broadcast", "coral:broadcast"},
      {"reduce", "coral:reduce"},
      {"all_gather", "coral:all_gather"},
      {"all_gather_into_tensor", "coral:_all_gather_base"},
      {"all_gather_coalesced", "coral:all_gather"},
      {"allgather_into_tensor_coalesced", "coral:allgather_into_tensor_coalesced"},
      {"gather", "coral:gather"},
      {"scatter", "coral:scatter"},
      {"reduce_scatter", "coral:reduce_scatter"},
      {"reduce_scatter_tensor", "coral:_reduce_scatter_base"},
      {"reduce_scatter_tensor_coalesced", "coral:reduce_scatter_tensor_coalesced"},
      {"all_to_all_single", "coral:all_to_all"},
      {"all_to_all", "coral:all_to_all"},
      {"send", "coral:send"},
      {"recv", "coral:recv"},
      {"barrier", "coral:barrier"},
  };
  for (const auto& [name, title] : titles)
    if (std::strcmp(name, what) == 0) return title;
  return nullptr;
}

constexpr const char* kUidKey = "coral/unique_id";

// Coral groups open on this thread for coalesced blocks of CUDA calls, over every group: a Coral
// group is the thread's, so one block's must not take another group's calls.
thread_local int t_cuda_blocks = 0;
// Time estimates open on this thread (_time_estimator): calls are priced, not run, meanwhile.
thread_local int t_estimating = 0;

std::vector<uint8_t> to_bytes(const coralUniqueId& id) {
  return std::vector<uint8_t>(id.internal, id.internal + sizeof id.internal);
}

#ifdef CORAL_TORCH_CUDA
// torch's current stream for the tensor's GPU. torch's default stream is NULL, which Coral reads
// as "host buffers" when its own CUDA is unusable (and then touches device memory): the legacy
// stream it is, named.
void* current_stream(const at::Tensor& t) {
  void* stream = c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
  return stream ? stream : cudaStreamLegacy;
}
#endif

// A torch timeout as Coral's whole seconds (at least 1).
int coral_seconds(std::chrono::milliseconds timeout) {
  // Up: Coral counts whole seconds, and a 2.9 s timeout must not give up at 2.
  const auto seconds = std::chrono::ceil<std::chrono::seconds>(timeout).count();
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(seconds, INT32_MAX)));
}

}  // namespace

ProcessGroupCoral::ProcessGroupCoral(const c10::intrusive_ptr<::c10d::Store>& store, int rank, int size,
                                     std::chrono::milliseconds timeout)
    : CORAL_TORCH_BASE(rank, size), timeout_(timeout), store_(store) {
  // The group meets through the store torch hands it (a prefix store per group), so new_group's
  // members find each other without another port or variable.
  coralUniqueId id;
  if (rank == 0) {
    const coralResult_t r = coralGetUniqueId(&id);
    TORCH_CHECK(r == coralSuccess, "coral: init: coralGetUniqueId: ", coral_error(nullptr, r));
    store->set(kUidKey, to_bytes(id));
  } else {
    store->wait({kUidKey}, timeout);
    const std::vector<uint8_t> bytes = store->get(kUidKey);
    TORCH_CHECK(bytes.size() == sizeof id.internal, "coral: init: the store's ", kUidKey, " has ", bytes.size(),
                " bytes, not ", sizeof id.internal);
    std::memcpy(id.internal, bytes.data(), bytes.size());
  }
  // FNV-1a of the id: the same on every rank, new for each group made on the store.
  uint64_t h = 1469598103934665603ull;
  for (unsigned char b : id.internal) h = (h ^ b) * 1099511628211ull;
  nonce_ = std::to_string(h);
  coralConfig_t config = CORAL_CONFIG_INITIALIZER;
  config.timeoutSeconds = coral_seconds(timeout);
  const coralResult_t r = coralCommInitRankConfig(&comm_, size, id, rank, &config);
  TORCH_CHECK(r == coralSuccess, "coral: init of rank ", rank, " of ", size, ": ", coral_error(nullptr, r));
  completer_ = std::make_shared<Completer>();
}

namespace {
int comm_rank(coralComm_t comm) {
  int rank = 0;
  coralCommUserRank(comm, &rank);
  return rank;
}
int comm_size(coralComm_t comm) {
  int size = 0;
  coralCommCount(comm, &size);
  return size;
}
}  // namespace

ProcessGroupCoral::ProcessGroupCoral(coralComm_t comm, const c10::intrusive_ptr<::c10d::Store>& store,
                                     std::string nonce, std::chrono::milliseconds timeout)
    : CORAL_TORCH_BASE(comm_rank(comm), comm_size(comm)),
      comm_(comm),
      timeout_(timeout),
      store_(store),
      nonce_(std::move(nonce)),
      completer_(std::make_shared<Completer>()) {}

ProcessGroupCoral::~ProcessGroupCoral() {
  // Reached from Python (the group's last reference), this thread holds the GIL, and the
  // completion thread may need it to finish: a future's Python callback, or the last reference
  // to a Python object it drops. Waiting for it with the GIL held hung a DDP job at teardown.
  std::optional<pybind11::gil_scoped_release> no_gil;
  if (Py_IsInitialized() && PyGILState_Check()) no_gil.emplace();
  // A send or receive still pending at teardown has no partner coming (gloo drops them):
  // waiting for it would last the group's whole timeout (30 minutes by default). After a
  // moment's grace for one about to match, revoke: it ends here, and on the peer with it.
  const auto grace = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  while (p2p_pending_->load() > 0 && std::chrono::steady_clock::now() < grace)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (p2p_pending_->load() > 0) coralCommRevoke(comm_);
  // Every request settles before the communicator goes: the unclaimed ones here, the rest on
  // the completion thread.
  std::deque<std::weak_ptr<OpState>> live;
  {
    std::lock_guard<std::mutex> lock(live_mu_);
    live.swap(live_);
  }
  for (auto& w : live)
    if (auto op = w.lock(); op && op->claim()) op->settle();
  completer_->drain();
  // Callers still inside coralWait (claimed above by them) must leave it before the communicator
  // goes; after an abort their waits end at once.
  while (in_coral_->load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  coralResult_t async = coralSuccess;
  coralCommGetAsyncError(comm_, &async);
  // A failed communicator cannot finish a clean teardown with its peers: abort it instead.
  if (async == coralSuccess)
    coralCommDestroy(comm_);
  else
    coralCommAbort(comm_);
}

void ProcessGroupCoral::fail(const char* what, coralResult_t r) const {
  TORCH_CHECK(false, "coral: ", what, " on rank ", getRank(), " of ", getSize(), ": ", coral_error(comm_, r));
}

std::shared_ptr<OpState> ProcessGroupCoral::new_op(const char* what, const Tensors& outputs,
                                                   const std::vector<c10::Device>& devices, Finish finish) {
  auto op = std::make_shared<OpState>();
  op->comm = comm_;
  op->in_coral = in_coral_;
  op->what = what;
  op->rank = getRank();
  op->size = getSize();
  op->finish = std::move(finish);
  op->outputs = outputs;
  static const c10::TypePtr list_of_tensors = c10::ListType::create(c10::TensorType::get());
  op->future = c10::make_intrusive<c10::ivalue::Future>(list_of_tensors, devices);
  return op;
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupCoral::run(::c10d::OpType type, const char* what, const Tensors& outputs,
                                                        const at::Tensor& sample, const Issue& issue, Finish finish,
                                                        const Tensors& profiled) {
  if (t_estimating > 0) return priced(type, what, outputs, sample, issue);
  if (type != ::c10d::OpType::SEND && type != ::c10d::OpType::RECV && type != ::c10d::OpType::RECVANYSOURCE) ++seq_;
  std::vector<c10::Device> devices;
  if (sample.defined() && sample.is_cuda()) devices.push_back(sample.device());
  // Another thread's block (a watchdog aborting inside torch's manager) is not this call's.
  Coalescing* block = open_blocks_.load(std::memory_order_relaxed) > 0 ? my_block() : nullptr;
  const c10::optional<Tensors> inputs = !profiled.empty()  ? c10::optional<Tensors>(profiled)
                                        : sample.defined() ? c10::optional<Tensors>(Tensors{sample})
                                                           : c10::nullopt;
  auto op = new_op(what, outputs, devices, std::move(finish));
  if (!devices.empty()) {
#ifdef CORAL_TORCH_CUDA
    // Stream-ordered on torch's current stream, as ProcessGroupNCCL: the caller's later kernels
    // on that stream see the result; the future's CUDA events carry it to other streams.
    c10::cuda::CUDAGuard guard(sample.device());
    // Works on device tensors complete when queued; a stream-ordered call that failed is
    // reported by Coral at the group's next call, which fails (issue() below).
    void* stream = current_stream(sample);
    // One Coral group per thread: a block's group must not take another group's calls.
    if (block && !block->group_open) {
      TORCH_CHECK(!block->host, "coral: ", what, ": a coalesced block of CPU operations cannot take CUDA tensors");
      TORCH_CHECK(t_cuda_blocks == 0, "coral: ", what,
                  ": coalesced blocks of CUDA calls on two groups at once (nested) are not supported");
      const coralResult_t r = coralGroupStart();
      if (r != coralSuccess) fail(what, r);
      block->group_open = true;
      ++t_cuda_blocks;
    } else if (!block) {
      TORCH_CHECK(t_cuda_blocks == 0, "coral: ", what,
                  ": a CUDA call on this group inside another group's coalesced block is not supported");
    }
    const coralResult_t r = issue(stream, nullptr);
    if (r != coralSuccess) fail(what, r);
    auto work = c10::make_intrusive<WorkCoral>(getRank(), type, profiling_title(what), inputs, outputs, op, completer_);
    op->claim();
    if (block) {  // queued at the group's end: the copies back wait for it, on this stream
      op->deferred = true;
      block->deferred.push_back(
          [op, current = c10::cuda::getCurrentCUDAStream(sample.device().index())](coralResult_t r) {
            c10::cuda::CUDAStreamGuard on(current);
            if (r != coralSuccess) op->result = r;
            op->deferred = false;
            op->settle();
          });
      block->works.push_back(work);
      return work;
    }
    op->settle();  // the copies back are queued on the stream too
    return work;
#else
    TORCH_CHECK(false, "coral: ", what, ": this coral_torch was built without CUDA; the tensor is on ",
                sample.device());
#endif
  }
  if (block) {
    TORCH_CHECK(!block->group_open, "coral: ", what,
                ": a coalesced block of CUDA operations cannot take CPU tensors or barriers");
    block->host = true;
  }
  const coralResult_t r = issue(nullptr, &op->request);
  if (r != coralSuccess) fail(what, r);
  if (type == ::c10d::OpType::SEND || type == ::c10d::OpType::RECV) {
    op->p2p_pending = p2p_pending_;
    ++*p2p_pending_;
  }
  auto work = c10::make_intrusive<WorkCoral>(getRank(), type, profiling_title(what), inputs, outputs, op, completer_);
  // Host operations need no group: Coral's non-blocking calls already progress together.
  if (block) block->works.push_back(work);
  std::lock_guard<std::mutex> lock(live_mu_);
  // Requests complete in order: the claimed ones at the front are done with.
  while (!live_.empty()) {
    auto front = live_.front().lock();
    if (front && !front->is_claimed()) break;
    live_.pop_front();
  }
  live_.push_back(op);
  return work;
}

// Inside a time estimate: the call joins the thread's open Coral group, which the estimate's end
// prices and drops; its work is done at once, its tensors untouched.
c10::intrusive_ptr<::c10d::Work> ProcessGroupCoral::priced(::c10d::OpType type, const char* what,
                                                           const Tensors& outputs, const at::Tensor& sample,
                                                           const Issue& issue) {
  void* stream = nullptr;
  std::vector<c10::Device> devices;
  if (sample.defined() && sample.is_cuda()) {
#ifdef CORAL_TORCH_CUDA
    devices.push_back(sample.device());
    stream = current_stream(sample);
#else
    TORCH_CHECK(false, "coral: ", what, ": this coral_torch was built without CUDA; the tensor is on ",
                sample.device());
#endif
  }
  const coralResult_t r = issue(stream, nullptr);  // the blocking form: deferred by the group
  if (r != coralSuccess) fail(what, r);
  auto op = new_op(what, outputs, devices, {});
  auto work =
      c10::make_intrusive<WorkCoral>(getRank(), type, profiling_title(what), c10::nullopt, outputs, op, completer_);
  op->claim();
  op->settle();
  return work;
}

ProcessGroupCoral::Coalescing* ProcessGroupCoral::my_block() {
  std::lock_guard<std::mutex> lock(blocks_mu_);
  auto it = blocks_.find(std::this_thread::get_id());
  return it == blocks_.end() ? nullptr : &it->second;  // nodes stay put while others come and go
}

std::optional<ProcessGroupCoral::Coalescing> ProcessGroupCoral::take_block() {
  std::lock_guard<std::mutex> lock(blocks_mu_);
  auto it = blocks_.find(std::this_thread::get_id());
  if (it == blocks_.end()) return std::nullopt;
  Coalescing block = std::move(it->second);
  blocks_.erase(it);
  open_blocks_.fetch_sub(1);
  return block;
}

coralResult_t ProcessGroupCoral::close_block(Coalescing& block) {
  if (!block.group_open) return coralSuccess;
  const coralResult_t r = coralGroupEnd();
  --t_cuda_blocks;
  for (auto& settle : block.deferred) settle(r);
  return r;
}

#if TORCH_VERSION_MAJOR >= 2
void ProcessGroupCoral::startCoalescing() {
  // torch skips endCoalescing when the block's body raised: a block this thread left open ends
  // here, its deferred calls queued as they were.
  if (auto stale = take_block()) close_block(*stale);
  std::lock_guard<std::mutex> lock(blocks_mu_);
  blocks_.emplace(std::this_thread::get_id(), Coalescing{});
  open_blocks_.fetch_add(1);
}

#ifdef CORAL_TORCH_BACKEND_ABORT
void ProcessGroupCoral::abort() {
  // Revoked, not freed: other threads may be waiting on the communicator's requests right now.
  coralCommRevoke(comm_);
}
#endif

#ifdef CORAL_TORCH_BACKEND_TIMEOUT
void ProcessGroupCoral::setTimeout(std::chrono::milliseconds timeout) {
  const coralResult_t r = coralCommSetTimeout(comm_, coral_seconds(timeout));
  if (r != coralSuccess) fail("setTimeout", r);
  timeout_ = timeout;
}
#endif

#ifdef CORAL_TORCH_BACKEND_TIME_ESTIMATION
void ProcessGroupCoral::start_time_estimate() {
  TORCH_CHECK(t_cuda_blocks == 0, "coral: a time estimate inside a coalesced block of CUDA calls is not supported");
  const coralResult_t r = coralGroupStart();
  if (r != coralSuccess) fail("time estimate", r);
  ++t_estimating;
}

float ProcessGroupCoral::end_time_estimate() {
  TORCH_CHECK(t_estimating > 0, "coral: end of a time estimate on rank ", getRank(), " without its start");
  double us = 0;
  const coralResult_t r = coralGroupEstimate(&us);
  coralGroupDiscard();  // the priced calls never run
  --t_estimating;
  if (r != coralSuccess) fail("time estimate", r);
  return static_cast<float>(us);
}
#endif

#ifdef CORAL_TORCH_BACKEND_SHRINKING
c10::intrusive_ptr<::c10d::Backend> ProcessGroupCoral::shrink(const std::vector<int64_t>& ranks_to_exclude,
                                                              int /*shrink_flags*/,
                                                              const c10::intrusive_ptr<Options>& opts_override) {
  // SHRINK_ABORT or not: Coral's shrink meets the survivors outside this communicator, so it works
  // whether its operations failed (a rank died) or not.
  const std::vector<int> exclude(ranks_to_exclude.begin(), ranks_to_exclude.end());
  coralComm_t next = nullptr;
  const coralResult_t r = coralCommShrink(comm_, exclude.data(), static_cast<int>(exclude.size()), &next);
  if (r != coralSuccess) fail("shrink", r);
  // The new group's keys in the store must not meet this group's (its monitored barriers).
  return c10::make_intrusive<ProcessGroupCoral>(next, store_, nonce_ + "/shrunk" + std::to_string(++shrinks_),
                                                opts_override ? opts_override->timeout : timeout_);
}
#endif

c10::intrusive_ptr<::c10d::Work> ProcessGroupCoral::endCoalescing() {
  std::optional<Coalescing> block = take_block();
  TORCH_CHECK(block, "coral: endCoalescing on rank ", getRank(), " without startCoalescing on this thread");
  const coralResult_t r = close_block(*block);
  if (r != coralSuccess) fail("coalesced block", r);
  return c10::make_intrusive<WorkCoalesced>(getRank(), std::move(block->works));
}
#endif

}  // namespace coral::torch_backend
