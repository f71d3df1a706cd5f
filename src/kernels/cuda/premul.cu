// PreMulSum's pre-scaling, dst = src * scalar, for every dtype: 16-byte vectors between the
// first and last 16-byte boundaries, elements (bytes where not element-aligned) around them.
#include <cstring>

#include "kernels/cuda/reduce.cuh"

namespace coral::kernels::cuda {

namespace detail {

// The multiplier: read from device memory when the kernel runs (dev), else its bytes, copied at
// the call, in the kernel's arguments (so the caller's host value may change right after).
struct Scalar {
  const void* dev;
  alignas(8) unsigned char bytes[8];
};

template <class T>
__device__ inline T scalar_value(const Scalar& s) {
  T v;
  if (s.dev)
    memcpy(&v, s.dev, sizeof(T));  // any alignment
  else
    memcpy(&v, s.bytes, sizeof(T));
  return v;
}

// Prod's arithmetic, so integers wrap and half/fp8 types multiply in fp32 and round once.
template <class T, bool Aligned>
__global__ void __launch_bounds__(kThreads)
    premul_kernel(void* dst, const void* src, size_t head, size_t body, size_t n, Scalar sc) {
  using A = typename Acc<T>::type;
  const A m = Acc<T>::in(scalar_value<T>(sc));
  constexpr int per = 16 / sizeof(T);
  const size_t tid = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const auto* vs = reinterpret_cast<const uint4*>(static_cast<const char*>(src) + head * sizeof(T));
  auto* vd = reinterpret_cast<uint4*>(static_cast<char*>(dst) + head * sizeof(T));
  for (size_t v = tid; v < body / per; v += stride) {
    uint4 raw = vs[v];
    T x[per];
    memcpy(x, &raw, 16);
#pragma unroll
    for (int j = 0; j < per; ++j) x[j] = Acc<T>::out(Prod::apply(Acc<T>::in(x[j]), m));
    memcpy(&raw, x, 16);
    vd[v] = raw;
  }
  for (size_t s = tid; s < n - body; s += stride) {  // [0, head) and [head + body, n)
    const size_t e = s < head ? s : body + s;
    st<T, Aligned>(dst, e, Acc<T>::out(Prod::apply(Acc<T>::in(ld<T, Aligned>(src, e)), m)));
  }
}

template <class T>
int launch_premul(void* dst, const void* src, size_t n, const void* scalar, bool device_scalar, cudaStream_t s) {
  if (n == 0) return 0;
  Scalar sc{};
  if (device_scalar)
    sc.dev = scalar;
  else
    std::memcpy(sc.bytes, scalar, sizeof(T));
  const void* ptrs[2] = {src, dst};
  const VecPlan p = plan_vectors(ptrs, 2, sizeof(T), n);
  const bool aligned =
      reinterpret_cast<uintptr_t>(dst) % alignof(T) == 0 && reinterpret_cast<uintptr_t>(src) % alignof(T) == 0;
  const int grid = grid_for(p.body / (16 / sizeof(T)) + p.head + p.tail);
  (void)cudaGetLastError();  // as in launch_reduce: report this launch's error only
  if (aligned)
    premul_kernel<T, true><<<grid, kThreads, 0, s>>>(dst, src, p.head, p.body, n, sc);
  else
    premul_kernel<T, false><<<grid, kThreads, 0, s>>>(dst, src, p.head, p.body, n, sc);
  return static_cast<int>(cudaGetLastError());
}

int preload_premul() {
  cudaError_t e = cudaSuccess;
  for_each_type([&](auto t) {
    using T = typename decltype(t)::type;
    load_kernel(reinterpret_cast<const void*>(premul_kernel<T, true>), e);
    load_kernel(reinterpret_cast<const void*>(premul_kernel<T, false>), e);
  });
  return static_cast<int>(e);
}

}  // namespace detail

int premul(coralDataType_t t, void* dst, const void* src, size_t n, const void* scalar, bool device_scalar,
           void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  switch (t) {
    case coralInt8:
      return detail::launch_premul<int8_t>(dst, src, n, scalar, device_scalar, s);
    case coralUint8:
      return detail::launch_premul<uint8_t>(dst, src, n, scalar, device_scalar, s);
    case coralInt32:
      return detail::launch_premul<int32_t>(dst, src, n, scalar, device_scalar, s);
    case coralUint32:
      return detail::launch_premul<uint32_t>(dst, src, n, scalar, device_scalar, s);
    case coralInt64:
      return detail::launch_premul<int64_t>(dst, src, n, scalar, device_scalar, s);
    case coralUint64:
      return detail::launch_premul<uint64_t>(dst, src, n, scalar, device_scalar, s);
    case coralFloat16:
      return detail::launch_premul<__half>(dst, src, n, scalar, device_scalar, s);
    case coralFloat32:
      return detail::launch_premul<float>(dst, src, n, scalar, device_scalar, s);
    case coralFloat64:
      return detail::launch_premul<double>(dst, src, n, scalar, device_scalar, s);
    case coralBfloat16:
      return detail::launch_premul<__nv_bfloat16>(dst, src, n, scalar, device_scalar, s);
    case coralFloat8e4m3:
      return detail::launch_premul<__nv_fp8_e4m3>(dst, src, n, scalar, device_scalar, s);
    case coralFloat8e5m2:
      return detail::launch_premul<__nv_fp8_e5m2>(dst, src, n, scalar, device_scalar, s);
    default:
      return static_cast<int>(cudaErrorInvalidValue);
  }
}

}  // namespace coral::kernels::cuda
