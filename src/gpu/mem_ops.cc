#include "gpu/mem_ops.h"

#include <cstring>

#include "base/error.h"
#include "gpu/emulate.h"
#include "gpu/runtime.h"
#include "kernels/reduce.h"
#if CORAL_HAVE_CUDA
#include "kernels/cuda/kernels.h"
#endif

namespace coral::gpu {

void CudaMemOps::copy(void* dst, const void* src, size_t bytes) {
  if (!bytes || dst == src) return;
  copy_async(dst, src, bytes, stream_);
  pending_ = true;
}

void CudaMemOps::reduce(void* dst, void* dst2, const void* a, const void* b, size_t n) {
  const void* srcs[2] = {a, b};
  fold(dst, dst2, srcs, 2, n);
}

void CudaMemOps::reduce_many(void* dst, const void* const* srcs, int k, size_t n) { fold(dst, nullptr, srcs, k, n); }

void CudaMemOps::fold(void* dst, void* dst2, const void* const* srcs, int k, size_t n) {
  if (!n) return;
  if (emu::enabled()) {
    // Like the device kernel, any source may be dst itself (an in-place fold's own input).
    kernels::active().reduce_many[dtype_][kernels::op_slot(op_)](dst, srcs, k, n);
    if (dst2) std::memcpy(dst2, dst, n * kernels::dtype_size(dtype_));
    return;
  }
#if CORAL_HAVE_CUDA
  kernels::cuda::ReduceArgs r;
  for (int i = 0; i < k; ++i) r.src[i] = srcs[i];
  r.nsrc = k;
  r.dst[0] = dst;
  r.dst[1] = dst2;
  r.ndst = dst2 ? 2 : 1;
  r.n = n;
  check(kernels::cuda::reduce(dtype_, op_, r, stream_), "reduction kernel launch");
  pending_ = true;
#else
  (void)dst, (void)dst2, (void)srcs, (void)k;
  check(1, "reduction kernel (no CUDA in this build)");
#endif
}

void CudaMemOps::scale(void* dst, size_t n, int divisor) {
  if (!n) return;
  if (emu::enabled()) {
    kernels::active().scale[dtype_](dst, dst, n, divisor);
    return;
  }
#if CORAL_HAVE_CUDA
  check(kernels::cuda::scale(dtype_, dst, dst, n, divisor, stream_), "scale kernel launch");
  pending_ = true;
#else
  (void)dst, (void)divisor;
  check(1, "scale kernel (no CUDA in this build)");
#endif
}

void CudaMemOps::premul(void* dst, const void* src, size_t n, const void* scalar, bool device_scalar) {
  if (!n) return;
  if (emu::enabled()) {
    // The stand-in GPU's memory is host memory: a device scalar is read like a host one.
    kernels::active().premul[dtype_](dst, src, n, scalar);
    return;
  }
#if CORAL_HAVE_CUDA
  check(kernels::cuda::premul(dtype_, dst, src, n, scalar, device_scalar, stream_), "premul kernel launch");
  pending_ = true;
#else
  (void)dst, (void)src, (void)scalar, (void)device_scalar;
  check(1, "premul kernel (no CUDA in this build)");
#endif
}

void CudaMemOps::fence() {
  if (!pending_) return;
  Stream::sync_raw(stream_, limit_);
  pending_ = false;
}

}  // namespace coral::gpu
