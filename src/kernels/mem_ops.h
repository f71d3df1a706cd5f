// The memory operations a schedule's steps need, behind one interface so that the executor can
// run device buffers through kernels of another library (gpu/) without knowing it.
#pragma once
#include <cstddef>

namespace coral::kernels {

// How steps touch memory when buffers live on a GPU: asynchronous copies and reductions, and a
// fence before a message is handed to a peer or a slot is given back. Host buffers use the CPU
// kernels directly (no virtual calls on that path).
class MemOps {
 public:
  virtual ~MemOps() = default;
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  // dst = a (op) b; with dst2, the result is written there too.
  virtual void reduce(void* dst, void* dst2, const void* a, const void* b, size_t n) = 0;
  // dst = srcs[0] (op) ... (op) srcs[k-1] in one pass (k <= kMaxSources).
  virtual void reduce_many(void* dst, const void* const* srcs, int k, size_t n) = 0;
  static constexpr int kMaxSources = 8;
  virtual void scale(void* dst, size_t n, int divisor) = 0;
  // dst = src * scalar (PreMulSum), the scalar one value of the call's type: in device memory,
  // read when the kernel runs, or with device_scalar false in host memory, read at this call.
  virtual void premul(void* dst, const void* src, size_t n, const void* scalar, bool device_scalar) = 0;
  // Everything issued so far is complete and visible to peers.
  virtual void fence() = 0;
};

}  // namespace coral::kernels
