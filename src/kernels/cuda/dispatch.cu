// Entry points of the CUDA kernels: op dispatch, the scale kernel that ends coralAvg, and the
// multi-destination copy (PreMulSum's premul is in premul.cu).
#include <initializer_list>

#include "kernels/cuda/reduce.cuh"

namespace coral::kernels::cuda {

namespace detail {

int grid_for(size_t work) {
  // The SM count of each device, read once.
  static int sms[64] = {};
  int dev = 0;
  cudaGetDevice(&dev);
  int& n = sms[dev & 63];
  if (n == 0 && cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) n = 16;
  const size_t want = (work + kThreads - 1) / kThreads;
  const size_t cap = static_cast<size_t>(n) * 4;
  return static_cast<int>(want < 1 ? 1 : want > cap ? cap : want);
}

// Elements go through ld/st as in the reductions: a typed access when aligned. (A byte-wise
// memcpy of each fp16/bf16 result stored a wrong low byte on sm_90 with CUDA 13.0; see st.)
template <class T, bool Aligned>
__global__ void __launch_bounds__(kThreads) scale_kernel(T* dst, const T* src, size_t n, int divisor) {
  using A = typename Acc<T>::type;
  // Integers divide in 64 bits: the rank count wraps in int8 (128 ranks) or is 0 in uint8 (256).
  using D = std::conditional_t<std::is_integral_v<A>, std::conditional_t<std::is_signed_v<A>, int64_t, uint64_t>, A>;
  const D div = static_cast<D>(divisor);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
    st<T, Aligned>(dst, i, Acc<T>::out(static_cast<A>(static_cast<D>(Acc<T>::in(ld<T, Aligned>(src, i))) / div)));
}

template <class T>
int launch_scale(void* dst, const void* src, size_t n, int divisor, cudaStream_t s) {
  if (n == 0) return 0;
  const bool aligned =
      reinterpret_cast<uintptr_t>(dst) % alignof(T) == 0 && reinterpret_cast<uintptr_t>(src) % alignof(T) == 0;
  auto* d = static_cast<T*>(dst);
  auto* x = static_cast<const T*>(src);
  const int grid = grid_for(n);
  (void)cudaGetLastError();  // as in launch_reduce: report this launch's error only
  if (aligned)
    scale_kernel<T, true><<<grid, kThreads, 0, s>>>(d, x, n, divisor);
  else
    scale_kernel<T, false><<<grid, kThreads, 0, s>>>(d, x, n, divisor);
  return static_cast<int>(cudaGetLastError());
}

__global__ void wait_kernel(const volatile uint64_t* flag, uint64_t value) {
  while (*flag < value) __nanosleep(1000);
}

}  // namespace detail

int preload() {
  for (int (*f)() : {detail::preload_sum, detail::preload_prod, detail::preload_max, detail::preload_min,
                     detail::preload_bitwise, detail::preload_premul})
    if (int e = f()) return e;
  cudaError_t e = cudaSuccess;
  detail::for_each_type([&](auto t) {
    using T = typename decltype(t)::type;
    detail::load_kernel(reinterpret_cast<const void*>(detail::scale_kernel<T, true>), e);
    detail::load_kernel(reinterpret_cast<const void*>(detail::scale_kernel<T, false>), e);
  });
  detail::load_kernel(reinterpret_cast<const void*>(detail::wait_kernel), e);
  return static_cast<int>(e);
}

int wait_geq(const volatile uint64_t* flag, uint64_t value, void* stream) {
  (void)cudaGetLastError();  // a stale error of this thread is not this launch's
  detail::wait_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(flag, value);
  return static_cast<int>(cudaGetLastError());
}

int reduce(coralDataType_t t, coralRedOp_t op, const ReduceArgs& a, void* stream) {
  if (a.nsrc < 1 || a.nsrc > kMaxSrcs || a.ndst < 1 || a.ndst > kMaxDsts)
    return static_cast<int>(cudaErrorInvalidValue);
  auto s = static_cast<cudaStream_t>(stream);
  switch (op) {
    case coralSum:
    case coralAvg:
      return detail::launch_sum(t, a, s);
    case coralProd:
      return detail::launch_prod(t, a, s);
    case coralMax:
      return detail::launch_max(t, a, s);
    case coralMin:
      return detail::launch_min(t, a, s);
    case coralBand:
      return detail::launch_band(t, a, s);
    case coralBor:
      return detail::launch_bor(t, a, s);
    case coralBxor:
      return detail::launch_bxor(t, a, s);
    default:
      return static_cast<int>(cudaErrorInvalidValue);
  }
}

int scale(coralDataType_t t, void* dst, const void* src, size_t n, int divisor, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  switch (t) {
    case coralInt8:
      return detail::launch_scale<int8_t>(dst, src, n, divisor, s);
    case coralUint8:
      return detail::launch_scale<uint8_t>(dst, src, n, divisor, s);
    case coralInt32:
      return detail::launch_scale<int32_t>(dst, src, n, divisor, s);
    case coralUint32:
      return detail::launch_scale<uint32_t>(dst, src, n, divisor, s);
    case coralInt64:
      return detail::launch_scale<int64_t>(dst, src, n, divisor, s);
    case coralUint64:
      return detail::launch_scale<uint64_t>(dst, src, n, divisor, s);
    case coralFloat16:
      return detail::launch_scale<__half>(dst, src, n, divisor, s);
    case coralFloat32:
      return detail::launch_scale<float>(dst, src, n, divisor, s);
    case coralFloat64:
      return detail::launch_scale<double>(dst, src, n, divisor, s);
    case coralBfloat16:
      return detail::launch_scale<__nv_bfloat16>(dst, src, n, divisor, s);
    case coralFloat8e4m3:
      return detail::launch_scale<__nv_fp8_e4m3>(dst, src, n, divisor, s);
    case coralFloat8e5m2:
      return detail::launch_scale<__nv_fp8_e5m2>(dst, src, n, divisor, s);
    default:
      return static_cast<int>(cudaErrorInvalidValue);
  }
}

// A copy is a one-source "reduction" of bytes: the same vector loop, any alignment.
int copy(const ReduceArgs& a, size_t bytes, void* stream) {
  if (a.nsrc != 1 || a.ndst < 1 || a.ndst > kMaxDsts) return static_cast<int>(cudaErrorInvalidValue);
  ReduceArgs b = a;
  b.n = bytes;
  return detail::launch_sum(coralUint8, b, static_cast<cudaStream_t>(stream));
}

}  // namespace coral::kernels::cuda
