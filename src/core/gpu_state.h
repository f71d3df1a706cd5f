// What a communicator keeps for stream-ordered calls and device buffers; made at the first
// such call, so host-only users never touch CUDA.
#pragma once
#include <algorithm>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "gpu/runtime.h"
#include "transport/transport.h"

namespace coral {

// The progress thread makes no CUDA call that allocates, frees, creates or destroys while a
// caller's stream may be parked on it. Such calls take a driver lock that a caller blocked in
// a synchronous copy (a pageable cudaMemcpyAsync waiting for its parked stream) holds: both
// then wait forever. Seen on an H200 with cudaEventDestroy, after three queued all-reduces
// and a copy of their result. So buffers are sized by the caller before it parks its stream,
// events are reused, and nothing is freed before the end.

// A grow-only buffer from one allocator (device or pinned host memory). The caller reserves
// (get) before parking; the progress thread's get then finds the room. Outgrown blocks are kept
// until the end: a call already running may still use one. Growth at least doubles, so what is
// kept stays under the final size.
template <void* (*Alloc)(size_t), void (*Free)(void*)>
class GrowBuffer {
 public:
  GrowBuffer() = default;
  GrowBuffer(const GrowBuffer&) = delete;
  GrowBuffer& operator=(const GrowBuffer&) = delete;
  ~GrowBuffer() {
    Free(p_);
    for (void* r : retired_) Free(r);
  }
  void* get(size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    if (bytes > size_) {
      const size_t want = std::max(bytes, 2 * size_);
      void* p = Alloc(want);
      if (p_) retired_.push_back(p_);
      p_ = p;
      size_ = want;
    }
    return p_;
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return size_;
  }

 private:
  std::mutex mu_;
  void* p_ = nullptr;
  size_t size_ = 0;
  std::vector<void*> retired_;
};

// Events for stream calls, taken by the caller and handed back (not destroyed) when the
// request is dropped, whichever thread drops it.
class EventPool : public std::enable_shared_from_this<EventPool> {
 public:
  std::shared_ptr<gpu::Event> take() {
    std::unique_ptr<gpu::Event> e;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!free_.empty()) {
        e = std::move(free_.back());
        free_.pop_back();
      }
    }
    if (!e) e = std::make_unique<gpu::Event>();
    return std::shared_ptr<gpu::Event>(e.release(), [pool = shared_from_this()](gpu::Event* ev) {
      std::lock_guard<std::mutex> lock(pool->mu_);
      pool->free_.emplace_back(ev);
    });
  }

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<gpu::Event>> free_;
};

using DeviceBuffer = GrowBuffer<gpu::alloc_device, gpu::free_device>;
using PinnedBuffer = GrowBuffer<gpu::alloc_pinned, gpu::free_pinned>;

// Pinned staging for stream-ordered sends and receives, a block per request: the progress
// thread runs several such requests at once (gpu_group.cc). The caller takes one, sized, before
// it parks its stream; it comes back to the pool (not freed) when the request is dropped.
class StagePool : public std::enable_shared_from_this<StagePool> {
 public:
  std::shared_ptr<std::byte> take(size_t bytes) {
    std::unique_ptr<PinnedBuffer> b;
    {
      std::lock_guard<std::mutex> lock(mu_);
      // The largest free block: the one least likely to grow.
      auto best = free_.end();
      for (auto it = free_.begin(); it != free_.end(); ++it)
        if (best == free_.end() || (*it)->size() > (*best)->size()) best = it;
      if (best != free_.end()) {
        b = std::move(*best);
        free_.erase(best);
      }
    }
    if (!b) b = std::make_unique<PinnedBuffer>();
    auto* p = static_cast<std::byte*>(b->get(std::max<size_t>(bytes, 1)));
    return std::shared_ptr<std::byte>(p, [pool = weak_from_this(), raw = b.release()](std::byte*) {
      std::unique_ptr<PinnedBuffer> back(raw);
      if (auto keep = pool.lock()) {
        std::lock_guard<std::mutex> lock(keep->mu_);
        keep->free_.emplace_back(std::move(back));
      }
    });
  }

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<PinnedBuffer>> free_;
};

// Switches the thread's GPU for a while and puts the first one back when it goes (in GpuState,
// its first member, so destroyed last).
struct DeviceRestore {
  int prev = -1;
  void switch_to(int dev) {
    if (dev < 0) return;
    const int now = gpu::current_device();
    if (now == dev) return;
    if (prev < 0) prev = now;  // the GPU before the first switch
    gpu::set_device(dev);
  }
  ~DeviceRestore() {
    try {
      if (prev >= 0) gpu::set_device(prev);
    } catch (const std::exception&) {  // a destructor must not throw; nothing is left to do
    }
  }
};

struct GpuState {
  GpuState(int dev, bool wait_on_host) : device(dev), host_wait(wait_on_host) {}
  // The flag's free syncs the current device, and the buffers belong to ours: make it current.
  ~GpuState() {
    try {
      restore.switch_to(device);
    } catch (const std::exception&) {  // at exit the runtime may be gone: tear down as we are
    }
  }
  DeviceRestore restore;
  int device;
  // CORAL_GPU_STREAM_WAIT: the caller waits on the host for each stream call, and its stream
  // is never parked on the flag.
  bool host_wait;
  gpu::Stream stream;   // the progress thread's: kernels and copies of every device call
  gpu::HostFlag flag;   // callers' streams wait on it
  uint64_t issued = 0;  // stream calls handed to the progress thread (under the progress queue's lock)
  // cuda_ipc links to every peer on this host, made at the first device-buffer call.
  bool connected = false;
  bool all_local = false;  // every peer is on this host: the device executor runs the schedule
  std::unique_ptr<transport::Domain> ipc;
  std::vector<transport::Link*> links;
  std::vector<transport::Domain*> domain_of;
  size_t chunk_bytes = 0;
  std::shared_ptr<EventPool> events = std::make_shared<EventPool>();
  DeviceBuffer scratch;   // one-shot and two-shot fold here: at most chunk_bytes
  PinnedBuffer stage[4];  // send and receive staging of collectives across hosts, double-buffered
  std::shared_ptr<StagePool> p2p_stages = std::make_shared<StagePool>();  // stream-ordered sends and receives
  DeviceBuffer premul;                                                    // PreMulSum's scaled inputs
  PinnedBuffer scalar;   // a device PreMulSum scalar read back for the host path
  gpu::Event staged[2];  // piece k copied to pinned memory
  gpu::Event landed[2];  // piece k copied back to the GPU
};

}  // namespace coral
