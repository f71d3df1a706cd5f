// What a communicator keeps for stream-ordered calls and device buffers; made at the first
// such call, so host-only users never touch CUDA.
#pragma once
#include <algorithm>
#include <memory>
#include <vector>

#include "gpu/runtime.h"
#include "transport/transport.h"

namespace coral {

// A grow-only buffer from one allocator (device or pinned host memory). Outgrown blocks are
// kept until the end: cudaFree and cudaFreeHost wait for the whole device, a caller's stream
// parked on the progress thread (which would be freeing) included. Growth at least doubles,
// so what is kept stays under the final size.
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
    if (bytes > size_) {
      const size_t want = std::max(bytes, 2 * size_);
      void* p = Alloc(want);
      if (p_) retired_.push_back(p_);
      p_ = p;
      size_ = want;
    }
    return p_;
  }

 private:
  void* p_ = nullptr;
  size_t size_ = 0;
  std::vector<void*> retired_;
};
using DeviceBuffer = GrowBuffer<gpu::alloc_device, gpu::free_device>;
using PinnedBuffer = GrowBuffer<gpu::alloc_pinned, gpu::free_pinned>;

struct GpuState {
  explicit GpuState(int dev) : device(dev) {}
  int device;
  gpu::Stream stream;  // the progress thread's: kernels and copies of every device call
  gpu::HostFlag flag;  // callers' streams wait on it
  uint64_t issued = 0;  // stream calls handed to the progress thread (under queue_mu_)
  // cuda_ipc links to every peer on this host, made at the first device-buffer call.
  bool connected = false;
  bool all_local = false;  // every peer is on this host: the device executor runs the schedule
  std::unique_ptr<transport::Domain> ipc;
  std::vector<transport::Link*> links;
  std::vector<transport::Domain*> domain_of;
  size_t chunk_bytes = 0;
  DeviceBuffer scratch;
  PinnedBuffer stage[4];  // send and receive staging, double-buffered
  gpu::Event staged[2];  // piece k copied to pinned memory
  gpu::Event landed[2];  // piece k copied back to the GPU
};

}  // namespace coral
