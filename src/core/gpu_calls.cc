// Stream-ordered calls and device buffers. The caller's thread only records an event and makes
// its stream wait on a host-mapped flag; the progress thread waits for the event, runs the
// collective, and raises the flag. One host thread drives the GPU, as with the host path:
// - every rank on this host: the schedule runs on device memory over cuda_ipc links (kernels
//   reduce straight out of the peer-written slots);
// - ranks on other hosts: the call is staged through pinned host memory in pieces, so copies to
//   and from the GPU overlap the network, and runs over the host transports.
#include <fmt/format.h>

#include <array>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "collectives/registry.h"
#include "core/communicator.h"
#include "core/gpu_state.h"
#include "kernels/reduce.h"

namespace coral {

int Communicator::gpu_device() {
  std::lock_guard<std::mutex> lock(queue_.mutex());
  return gpu_ ? gpu_->device : -1;
}

size_t Communicator::device_chunk_bytes() {
  wait_idle();
  std::lock_guard<std::mutex> lock(queue_.mutex());
  // Before the first device call connects the links: the slot size they start from (a query or
  // a group's estimate may come first, and a chunk of 0 would price one element at a time).
  return gpu_ && gpu_->connected ? gpu_->chunk_bytes : settings_.cuda_ipc_slot_bytes;
}

namespace {
// CORAL_GPU_STREAM_WAIT. A parked stream's wait sits in a hardware queue of the GPU; Coral's
// stream, if it shares that queue, would queue its kernels behind the wait forever. With
// CUDA_DEVICE_MAX_CONNECTIONS=1 (Megatron sets it) every stream shares the one queue.
bool wait_on_host() {
  const std::string v = config::get_string("CORAL_GPU_STREAM_WAIT");
  if (v != "auto") return v == "host";
  const char* c = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  return c && std::string(c) == "1";
}
}  // namespace

void Communicator::ensure_gpu() {
  check_usable();
  const int dev = gpu::current_device();
  std::lock_guard<std::mutex> lock(queue_.mutex());
  if (!gpu_) {
    gpu_ = std::make_unique<GpuState>(dev, wait_on_host());
    gpu::load_kernels();
    log::info(log::Coll, "stream-ordered calls run on GPU {}; the caller's stream waits {}", dev,
              gpu_->host_wait ? "on the host (CORAL_GPU_STREAM_WAIT=host)" : "on a flag");
  }
}

gpu::WaitLimit Communicator::gpu_limit() const { return {timeout_s_.load(), &usable_}; }

std::shared_ptr<Request> Communicator::submit_stream(std::shared_ptr<Request> req, void* stream) {
  // Captured, the call would run once now and its replays would only wait on the flag.
  if (gpu::stream_capturing(stream))
    fail(coralInvalidUsage,
         "the stream is being captured into a CUDA graph: Coral's stream-ordered calls cannot be "
         "captured (make them outside the capture)");
  req->ready = gpu_->events->take();
  req->ready->record(stream);
  if (gpu_->host_wait) {
    req->callers_waiting = &callers_waiting_;  // the caller blocks: the progress thread polls eagerly
    queue_.submit(req, [&] { req->seq = ++gpu_->issued; });
    return req;
  }
  uint64_t seq = 0;
  queue_.submit(req, [&] {
    seq = req->seq = ++gpu_->issued;
    gpu_->flag.note_wait(seq);  // under the lock, so the progress thread's parked() check is exact
  });
  // Not under the queue's lock: enqueueing blocks while the stream's launch queue is full, and
  // the progress thread needs that lock to take the very call the stream waits for. A wait
  // enqueued after the flag passed seq passes at once.
  try {
    gpu_->flag.enqueue_wait(stream, seq);
  } catch (const Error&) {
    req->wait_done();  // queued already: it must not run on buffers the caller takes back
    throw;
  }
  return nullptr;
}

void Communicator::prepare_device() {
  ensure_gpu();
  if (gpu_->connected) return;
  wait_idle();
  std::lock_guard<std::mutex> exec(exec_mu_);
  if (!gpu_->connected) connect_device_links();
}

bool Communicator::device_prepared() {
  std::lock_guard<std::mutex> lock(queue_.mutex());
  return gpu_ && gpu_->connected;
}

void Communicator::prepare_devices(const std::vector<std::pair<Communicator*, int>>& comms) {
  std::vector<std::exception_ptr> errors(comms.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < comms.size(); ++i)
    threads.emplace_back([&, i] {
      try {
        gpu::set_device(comms[i].second);
        comms[i].first->prepare_device();
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  for (std::thread& t : threads) t.join();
  for (std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

std::shared_ptr<Request> Communicator::run_on_stream(Call call, void* stream, bool device) {
  // Everything that allocates happens here, before this stream is parked (gpu_state.h says
  // why): the kernels' load (ensure_gpu), the links (cudaMalloc, IPC opens), the staging buffers.
  if (device)
    prepare_device();
  else
    ensure_gpu();
  if (device && !gpu_->all_local) staging_buffers(call);
  if (device && gpu_->all_local && call.premul.on)
    gpu_->premul.get(reduced_elems(call) * kernels::dtype_size(call.args.dtype));
  if (call.premul.on && call.premul.device_scalar) gpu_->scalar.get(8);
  if (device && gpu_->all_local) gpu_->scratch.get(device_scratch_bytes(call));
  auto req = std::make_shared<Request>();
  req->call = call;
  req->device = device;
  return submit_stream(std::move(req), stream);
}

size_t Communicator::device_scratch_bytes(const Call& call) {
  // As execute() will see the call: a PreMulSum call reads its scaled copy.
  collectives::CollArgs a = call.args;
  place(a);
  if (call.premul.on) a.in_place = false;
  const size_t max_bytes = gpu_->chunk_bytes;
  // The schedule execute() will build: device calls take the cost model's pick, never a trial's.
  auto need = [&] {
    const collectives::Decision d = tuner_.fixed(a, max_bytes);
    a.chunk = d.chunk;
    return collectives::build(a, d.algo).scratch_elems * kernels::dtype_size(a.dtype);
  };
  if (a.v) return need();  // its schedule depends on its counts
  const CallKey key = call_key(a, max_bytes);
  std::lock_guard<std::mutex> lock(scratch_need_mu_);
  auto it = scratch_need_.find(key);
  if (it == scratch_need_.end()) {
    if (scratch_need_.size() > 256) scratch_need_.clear();
    it = scratch_need_.emplace(key, need()).first;
  }
  return it->second;
}

void Communicator::run_stream_call(Request& r) {
  // The caller's stream waits on the flag whatever happens: a failure is reported through
  // coralCommGetAsyncError, never as a hung stream.
  struct Raise {
    GpuState& g;
    uint64_t v;
    ~Raise() { g.flag.set(v); }
  } raise{*gpu_, r.seq};
  try {
    gpu::set_device(gpu_->device);
    gpu::relax_capture();
    if (!r.group.empty()) {
      run_stream_p2p(r);  // waits for its stream itself, adopting what queues meanwhile
      return;
    }
    r.ready->sync();
    if (!r.device) {
      execute(r.call, true);
      return;
    }
    if (gpu_->all_local) {
      if (r.call.premul.on) prescale_device(r.call);
      execute(r.call, true, true);
    } else
      staged(r.call);
  } catch (const Error& e) {
    {
      std::lock_guard<std::mutex> lock(state_mu_);
      if (failed_ != coralSuccess) throw;  // execute() recorded it
    }
    std::string msg = fmt::format("rank {}: {}", rank_, e.what());
    record_failure(e.code(), msg);
    fail(e.code(), msg);
  }
}

void Communicator::connect_device_links() {
  GpuState& g = *gpu_;
  std::vector<int> local;
  for (int q = 0; q < nranks_; ++q)
    if (q != rank_ && peers_[q].host_id == peers_[rank_].host_id) local.push_back(q);
  g.links.assign(nranks_, nullptr);
  g.domain_of.assign(nranks_, nullptr);
  g.all_local = static_cast<int>(local.size()) == nranks_ - 1;
  g.chunk_bytes = settings_.cuda_ipc_slot_bytes;
  if (g.all_local && !local.empty()) {
    transport::LinkSet set = transport::connect_all({store_.get(), prefix_, &peers_, rank_, local, timeout_s_.load()},
                                                    transport::Memory::Device, collectives::kMinInFlight);
    g.links = std::move(set.links);
    g.domain_of = std::move(set.domain_of);
    g.chunk_bytes = std::min<size_t>(g.chunk_bytes, set.max_message);
    if (!set.domains.empty()) g.ipc = std::move(set.domains.front());
  }
  // Sized now, in the caller's thread (see gpu_state.h): the folds' scratch is at most a chunk.
  if (g.all_local) g.scratch.get(g.chunk_bytes);
  g.connected = true;
  log::info(log::Init, "device buffers: {}",
            g.all_local ? fmt::format("cuda_ipc with {} local peers", local.size())
                        : "staged through pinned host memory (ranks on other hosts)");
}

namespace {

// Elements of the send and receive buffers this rank touches, and whether pieces of the call
// are calls of the same collective (element-wise collectives).
struct Extent {
  size_t send = 0, recv = 0;
  bool elementwise = true;
};

// The end of the furthest block of a v-collective; without displacements, the blocks' sum.
size_t span(const std::vector<size_t>& counts, const std::vector<size_t>& displs) {
  size_t end = 0;
  for (size_t q = 0; q < counts.size(); ++q)
    end = displs.empty() ? end + counts[q] : std::max(end, displs[q] + counts[q]);
  return end;
}

Extent extent(const Call& c, int rank, int nranks) {
  const collectives::CollArgs& a = c.args;
  const size_t n = a.count;
  using collectives::Coll;
  switch (a.coll) {
    case Coll::AllReduce:
      return {n, n, true};
    case Coll::Broadcast:
      return {rank == a.root ? n : 0, n, true};
    case Coll::Reduce:
      return {n, rank == a.root ? n : 0, true};
    case Coll::Send:
      return {n, 0, true};
    case Coll::Recv:
      return {0, n, true};
    case Coll::ReduceScatter:
      return {n * nranks, n, false};
    case Coll::AllGather:
      return {n, n * nranks, false};
    case Coll::Barrier:
      return {0, 0, true};
    case Coll::AllToAll:
      return {n * nranks, n * nranks, false};
    case Coll::Gather:
      return {n, rank == a.root ? n * nranks : 0, false};
    case Coll::Scatter:
      return {rank == a.root ? n * nranks : 0, n, false};
    case Coll::AllToAllv:
      return {span(a.v->send_counts, a.v->send_displs), span(a.v->recv_counts, a.v->recv_displs), false};
    case Coll::AllGatherv:
      return {n, span(a.v->recv_counts, a.v->recv_displs), false};
    case Coll::ReduceScatterv:
      return {span(a.v->recv_counts, {}), n, false};
  }
  return {};
}

// Elements per staged piece of an element-wise call.
size_t stage_piece(uint64_t stage_bytes, size_t es) { return std::max<size_t>(1, stage_bytes / es); }

}  // namespace

std::array<std::byte*, 4> Communicator::staging_buffers(const Call& c) {
  const size_t es = kernels::dtype_size(c.args.dtype);
  const Extent ext = extent(c, rank_, nranks_);
  std::array<size_t, 4> bytes;
  if (ext.elementwise) {
    const size_t piece = stage_piece(settings_.gpu_stage_bytes, es) * es;
    bytes = {ext.send ? piece : 0, ext.send ? piece : 0, ext.recv ? piece : 0, ext.recv ? piece : 0};
  } else {
    bytes = {ext.send * es, 0, ext.recv * es, 0};
  }
  std::array<std::byte*, 4> buf{};
  for (int k = 0; k < 4; ++k)
    if (bytes[k]) buf[k] = static_cast<std::byte*>(gpu_->stage[k].get(bytes[k]));
  return buf;
}

void Communicator::staged(Call& c) {
  GpuState& g = *gpu_;
  void* s = g.stream.get();
  const size_t es = kernels::dtype_size(c.args.dtype);
  const Extent ext = extent(c, rank_, nranks_);
  auto* send = static_cast<const std::byte*>(c.send);
  auto* recv = static_cast<std::byte*>(c.recv);
  const std::array<std::byte*, 4> buf = staging_buffers(c);  // reserved before parking: no allocation
  if (!ext.elementwise) {
    Call sub = c;
    sub.send = buf[0];
    sub.recv = buf[2];
    sub.args.in_place = false;  // the staging buffers are apart
    if (ext.send) gpu::copy_async(const_cast<void*>(sub.send), send, ext.send * es, s);
    g.stream.sync(gpu_limit());
    execute(sub, true);
    if (ext.recv) gpu::copy_async(recv, sub.recv, ext.recv * es, s);
    g.stream.sync(gpu_limit());
    return;
  }
  const size_t n = c.args.count;
  const size_t piece = stage_piece(settings_.gpu_stage_bytes, es);
  const size_t pieces = n ? (n + piece - 1) / piece : 1;
  auto len = [&](size_t k) { return std::min(piece, n - k * piece); };
  auto host_send = [&](size_t k) { return buf[k % 2]; };
  auto host_recv = [&](size_t k) { return buf[2 + k % 2]; };
  // Piece k: copied down (event staged[k%2]), run on the host, copied up (event landed[k%2]).
  auto copy_down = [&](size_t k) {
    gpu::copy_async(host_send(k), send + k * piece * es, len(k) * es, s);
    g.staged[k % 2].record(s);
  };
  if (ext.send && n) copy_down(0);
  for (size_t k = 0; k < pieces; ++k) {
    if (ext.send && k + 1 < pieces) copy_down(k + 1);
    if (ext.send && n) g.staged[k % 2].sync(gpu_limit());
    if (ext.recv && k >= 2) g.landed[k % 2].sync(gpu_limit());  // piece k-2 has left this buffer
    Call sub = c;
    sub.args.count = n ? len(k) : 0;
    sub.send = host_send(k);  // null where the call sends or receives nothing
    sub.recv = host_recv(k);
    execute(sub, true);
    if (ext.recv && n) {
      gpu::copy_async(recv + k * piece * es, host_recv(k), len(k) * es, s);
      g.landed[k % 2].record(s);
    }
  }
  g.stream.sync(gpu_limit());
}

}  // namespace coral
