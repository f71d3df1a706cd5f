// The executor's memory operations for device buffers: CUDA kernels and copies on one stream,
// fenced (stream synchronised) before a peer may read what they wrote or a slot is given back.
#pragma once
#include <coral/coral.h>

#include "gpu/runtime.h"
#include "kernels/mem_ops.h"

namespace coral::gpu {

class CudaMemOps : public kernels::MemOps {
 public:
  // limit: how long fence() may wait for the stream.
  CudaMemOps(void* stream, coralDataType_t dtype, coralRedOp_t op, WaitLimit limit = {})
      : stream_(stream), dtype_(dtype), op_(op), limit_(limit) {}
  void copy(void* dst, const void* src, size_t bytes) override;
  void reduce(void* dst, void* dst2, const void* a, const void* b, size_t n) override;
  void reduce_many(void* dst, const void* const* srcs, int k, size_t n) override;
  void scale(void* dst, size_t n, int divisor) override;
  void premul(void* dst, const void* src, size_t n, const void* scalar, bool device_scalar) override;
  void fence() override;

 private:
  // dst (and dst2) = srcs[0] (op) ... (op) srcs[k-1]: one kernel for every reduction step.
  void fold(void* dst, void* dst2, const void* const* srcs, int k, size_t n);
  void* stream_;
  coralDataType_t dtype_;
  coralRedOp_t op_;
  WaitLimit limit_;
  bool pending_ = false;  // work issued since the last fence
};

}  // namespace coral::gpu
