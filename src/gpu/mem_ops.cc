#include "gpu/mem_ops.h"

#include "core/error.h"
#include "gpu/runtime.h"
#if CORAL_HAVE_CUDA
#include "kernels/cuda/kernels.h"
#endif

namespace coral::gpu {

void CudaMemOps::copy(void* dst, const void* src, size_t bytes) {
  if (!bytes || dst == src) return;
  copy_async(dst, src, bytes, stream_);
  pending_ = true;
}

#if CORAL_HAVE_CUDA
void CudaMemOps::reduce(void* dst, void* dst2, const void* a, const void* b, size_t n) {
  if (!n) return;
  kernels::cuda::ReduceArgs r;
  r.src[0] = a;
  r.src[1] = b;
  r.nsrc = 2;
  r.dst[0] = dst;
  r.dst[1] = dst2;
  r.ndst = dst2 ? 2 : 1;
  r.n = n;
  check(kernels::cuda::reduce(dtype_, op_, r, stream_), "reduction kernel launch");
  pending_ = true;
}

void CudaMemOps::scale(void* dst, size_t n, int divisor) {
  if (!n) return;
  check(kernels::cuda::scale(dtype_, dst, dst, n, divisor, stream_), "scale kernel launch");
  pending_ = true;
}
#else
void CudaMemOps::reduce(void*, void*, const void*, const void*, size_t) { check(1, "reduction kernel (no CUDA)"); }
void CudaMemOps::scale(void*, size_t, int) { check(1, "scale kernel (no CUDA)"); }
#endif

void CudaMemOps::fence() {
  if (!pending_) return;
  Stream::sync_raw(stream_);
  pending_ = false;
}

}  // namespace coral::gpu
