// What a communicator keeps for stream-ordered calls and device buffers; made at the first
// such call, so host-only users never touch CUDA.
#pragma once
#include <memory>
#include <vector>

#include "gpu/runtime.h"
#include "transport/transport.h"

namespace coral {

// A grow-only buffer from one allocator (device or pinned host memory).
template <void* (*Alloc)(size_t), void (*Free)(void*)>
class GrowBuffer {
 public:
  ~GrowBuffer() { Free(p_); }
  void* get(size_t bytes) {
    if (bytes > size_) {
      Free(p_);
      p_ = nullptr;
      size_ = 0;  // consistent if Alloc throws
      p_ = Alloc(bytes);
      size_ = bytes;
    }
    return p_;
  }

 private:
  void* p_ = nullptr;
  size_t size_ = 0;
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
