// The reduction kernel template, included by one .cu file per op family so they compile in
// parallel. Each thread moves 16-byte vectors (several in flight for memory-level parallelism)
// over a grid-stride loop; elements before the first 16-byte boundary and after the last one go
// element by element, byte by byte where a pointer is not even element-aligned.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/kernels.h"
#include "kernels/cuda/plan.h"

namespace coral::kernels::cuda::detail {

// Half types accumulate in fp32 and round once at the store, as the CPU kernels do.
template <class T>
struct Acc {
  using type = T;
  __device__ static type in(T v) { return v; }
  __device__ static T out(type a) { return a; }
};
template <>
struct Acc<__half> {
  using type = float;
  __device__ static float in(__half v) { return __half2float(v); }
  __device__ static __half out(float a) { return __float2half_rn(a); }
};
template <>
struct Acc<__nv_bfloat16> {
  using type = float;
  __device__ static float in(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ static __nv_bfloat16 out(float a) { return __float2bfloat16_rn(a); }
};

// fp8 too, rounding as the CPU's Fp8Format::encode (kernels/cpu/half.h): to nearest even,
// saturating to the largest finite value (infinities too), NaN to NaN.
template <class T, __nv_fp8_interpretation_t Kind>
struct Fp8Acc {
  using type = float;
  __device__ static float in(T v) { return __half2float(__half(__nv_cvt_fp8_to_halfraw(v.__x, Kind))); }
  __device__ static T out(float a) {
    T r;
    // Every NaN to 0x7f, as the CPU and cuda_fp8.hpp's software path do: the sm_89+ cvt
    // instruction's NaN encoding is not documented.
    r.__x = isnan(a) ? static_cast<__nv_fp8_storage_t>(0x7f) : __nv_cvt_float_to_fp8(a, __NV_SATFINITE, Kind);
    return r;
  }
};
template <>
struct Acc<__nv_fp8_e4m3> : Fp8Acc<__nv_fp8_e4m3, __NV_E4M3> {};
template <>
struct Acc<__nv_fp8_e5m2> : Fp8Acc<__nv_fp8_e5m2, __NV_E5M2> {};

// Integers wrap through unsigned arithmetic, as on the CPU.
struct Sum {
  template <class A>
  __device__ static A apply(A a, A b) {
    if constexpr (std::is_integral_v<A>) {
      using U = std::make_unsigned_t<A>;
      return static_cast<A>(static_cast<U>(a) + static_cast<U>(b));
    } else {
      return a + b;
    }
  }
};
struct Prod {
  template <class A>
  __device__ static A apply(A a, A b) {
    if constexpr (std::is_integral_v<A>) {
      using U = std::make_unsigned_t<A>;
      return static_cast<A>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    } else {
      return a * b;
    }
  }
};
struct Max {
  template <class A>
  __device__ static A apply(A a, A b) {
    return a > b ? a : b;
  }
};
struct Min {
  template <class A>
  __device__ static A apply(A a, A b) {
    return a < b ? a : b;
  }
};
// Bitwise ops: integer types only (launch_int_op), on the bits as stored.
struct Band {
  template <class A>
  __device__ static A apply(A a, A b) {
    return static_cast<A>(a & b);
  }
};
struct Bor {
  template <class A>
  __device__ static A apply(A a, A b) {
    return static_cast<A>(a | b);
  }
};
struct Bxor {
  template <class A>
  __device__ static A apply(A a, A b) {
    return static_cast<A>(a ^ b);
  }
};

// Element access: direct when every pointer is element-aligned, else through bytes.
template <class T, bool Aligned>
__device__ inline T ld(const void* base, size_t i) {
  const char* p = static_cast<const char*>(base) + i * sizeof(T);
  if constexpr (Aligned) {
    return *reinterpret_cast<const T*>(p);
  } else {
    T v;
    memcpy(&v, p, sizeof(T));
    return v;
  }
}
template <class T, bool Aligned>
__device__ inline void st(void* base, size_t i, T v) {
  char* p = static_cast<char*>(base) + i * sizeof(T);
  if constexpr (Aligned) {
    *reinterpret_cast<T*>(p) = v;
  } else {
    // Each byte goes through a byte permute, never straight from the value's register: ptxas
    // (CUDA 13.0, sm_90) compiled a byte store of a fresh fp16 conversion as a conversion to an
    // 8-bit integer (the low byte came out as the value's integer part). Only pointers that are
    // not element-aligned get here.
    using U = std::conditional_t<
        sizeof(T) == 1, uint8_t,
        std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
    U bits;
    memcpy(&bits, &v, sizeof(T));
    for (unsigned k = 0; k < sizeof(T); ++k) {
      const auto word = static_cast<uint32_t>(static_cast<uint64_t>(bits) >> (32 * (k / 4)));
      p[k] = static_cast<char>(__byte_perm(word, 0, 0x4440u | (k % 4)));
    }
  }
}

// Kernel arguments by value (they live in constant memory).
struct KArgs {
  const void* src[kMaxSrcs];
  void* dst[kMaxDsts];
  int nsrc, ndst;
  size_t head, body, n;
};

constexpr int kThreads = 512;
constexpr int kUnroll = 4;  // vectors each thread has in flight

template <class T, class Op, bool Aligned>
__global__ void __launch_bounds__(kThreads) reduce_kernel(KArgs a) {
  using A = typename Acc<T>::type;
  constexpr int per = 16 / sizeof(T);
  const size_t tid = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t nvec = a.body / per;
  for (size_t v0 = tid; v0 < nvec; v0 += stride * kUnroll) {
    A acc[kUnroll][per];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const size_t v = v0 + u * stride;
      if (v < nvec) {
        uint4 raw = reinterpret_cast<const uint4*>(static_cast<const char*>(a.src[0]) + a.head * sizeof(T))[v];
        T x[per];
        memcpy(x, &raw, 16);
#pragma unroll
        for (int j = 0; j < per; ++j) acc[u][j] = Acc<T>::in(x[j]);
      }
    }
#pragma unroll 1
    for (int k = 1; k < a.nsrc; ++k) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const size_t v = v0 + u * stride;
        if (v < nvec) {
          uint4 raw = reinterpret_cast<const uint4*>(static_cast<const char*>(a.src[k]) + a.head * sizeof(T))[v];
          T x[per];
          memcpy(x, &raw, 16);
#pragma unroll
          for (int j = 0; j < per; ++j) acc[u][j] = Op::apply(acc[u][j], Acc<T>::in(x[j]));
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const size_t v = v0 + u * stride;
      if (v < nvec) {
        T y[per];
#pragma unroll
        for (int j = 0; j < per; ++j) y[j] = Acc<T>::out(acc[u][j]);
        uint4 raw;
        memcpy(&raw, y, 16);
        for (int d = 0; d < a.ndst; ++d)
          reinterpret_cast<uint4*>(static_cast<char*>(a.dst[d]) + a.head * sizeof(T))[v] = raw;
      }
    }
  }
  // Scalar elements: [0, head) and [head + body, n).
  const size_t nscalar = a.n - a.body;
  for (size_t s = tid; s < nscalar; s += stride) {
    const size_t e = s < a.head ? s : a.body + s;
    A r = Acc<T>::in(ld<T, Aligned>(a.src[0], e));
    for (int k = 1; k < a.nsrc; ++k) r = Op::apply(r, Acc<T>::in(ld<T, Aligned>(a.src[k], e)));
    const T y = Acc<T>::out(r);
    for (int d = 0; d < a.ndst; ++d) st<T, Aligned>(a.dst[d], e, y);
  }
}

// Blocks enough to fill every SM a few times over; the grid-stride loop does the rest.
int grid_for(size_t work);

template <class T, class Op>
int launch(const ReduceArgs& r, cudaStream_t stream) {
  if (r.n == 0) return 0;
  const void* ptrs[kMaxSrcs + kMaxDsts];
  int np = 0;
  for (int i = 0; i < r.nsrc; ++i) ptrs[np++] = r.src[i];
  for (int i = 0; i < r.ndst; ++i) ptrs[np++] = r.dst[i];
  const VecPlan p = plan_vectors(ptrs, np, sizeof(T), r.n);
  bool aligned = true;
  for (int i = 0; i < np; ++i) aligned &= reinterpret_cast<uintptr_t>(ptrs[i]) % alignof(T) == 0;
  KArgs k{};
  for (int i = 0; i < r.nsrc; ++i) k.src[i] = r.src[i];
  for (int i = 0; i < r.ndst; ++i) k.dst[i] = r.dst[i];
  k.nsrc = r.nsrc;
  k.ndst = r.ndst;
  k.head = p.head;
  k.body = p.body;
  k.n = r.n;
  const size_t work = p.body / (16 / sizeof(T)) / kUnroll + p.head + p.tail;
  const int grid = grid_for(work);
  // cudaGetLastError below returns the thread's oldest unread error: an earlier call whose
  // result was not checked (a cudaFree at teardown, an attribute query) must not be blamed on
  // this launch. Sticky errors come back anyway.
  (void)cudaGetLastError();
  if (aligned)
    reduce_kernel<T, Op, true><<<grid, kThreads, 0, stream>>>(k);
  else
    reduce_kernel<T, Op, false><<<grid, kThreads, 0, stream>>>(k);
  return static_cast<int>(cudaGetLastError());
}

// The launcher for an op of the integer dtypes (the bitwise ops have no other).
template <class Op>
int launch_int_op(coralDataType_t t, const ReduceArgs& r, cudaStream_t s) {
  switch (t) {
    case coralInt8:
      return launch<int8_t, Op>(r, s);
    case coralUint8:
      return launch<uint8_t, Op>(r, s);
    case coralInt32:
      return launch<int32_t, Op>(r, s);
    case coralUint32:
      return launch<uint32_t, Op>(r, s);
    case coralInt64:
      return launch<int64_t, Op>(r, s);
    case coralUint64:
      return launch<uint64_t, Op>(r, s);
    default:
      return static_cast<int>(cudaErrorInvalidValue);
  }
}

// The launcher for one op over every dtype.
template <class Op>
int launch_op(coralDataType_t t, const ReduceArgs& r, cudaStream_t s) {
  switch (t) {
    case coralFloat16:
      return launch<__half, Op>(r, s);
    case coralFloat32:
      return launch<float, Op>(r, s);
    case coralFloat64:
      return launch<double, Op>(r, s);
    case coralBfloat16:
      return launch<__nv_bfloat16, Op>(r, s);
    case coralFloat8e4m3:
      return launch<__nv_fp8_e4m3, Op>(r, s);
    case coralFloat8e5m2:
      return launch<__nv_fp8_e5m2, Op>(r, s);
    default:
      return launch_int_op<Op>(t, r, s);
  }
}

// Calls f(std::type_identity<T>{}) for the element type of every dtype.
template <class F>
void for_each_type(F&& f) {
  f(std::type_identity<int8_t>{});
  f(std::type_identity<uint8_t>{});
  f(std::type_identity<int32_t>{});
  f(std::type_identity<uint32_t>{});
  f(std::type_identity<int64_t>{});
  f(std::type_identity<uint64_t>{});
  f(std::type_identity<__half>{});
  f(std::type_identity<float>{});
  f(std::type_identity<double>{});
  f(std::type_identity<__nv_bfloat16>{});
  f(std::type_identity<__nv_fp8_e4m3>{});
  f(std::type_identity<__nv_fp8_e5m2>{});
}

// Lazy loading (CUDA's default since 12.2) loads a kernel at its first launch, and loading
// waits for the context's running work: a caller's stream parked on Coral's host flag is such
// work, and it waits for that very launch. cudaFuncGetAttributes forces the load. Keeps the
// first error in e.
inline void load_kernel(const void* kernel, cudaError_t& e) {
  cudaFuncAttributes fa;
  if (e == cudaSuccess) e = cudaFuncGetAttributes(&fa, kernel);
}

// Loads the kernels of one op now (of the integer dtypes alone for an op that has no others).
// Each .cu preloads its own instantiations (another translation unit's would be copies).
template <class Op, bool kIntegersOnly = false>
int preload_op() {
  cudaError_t e = cudaSuccess;
  for_each_type([&](auto t) {
    using T = typename decltype(t)::type;
    if constexpr (!kIntegersOnly || std::is_integral_v<T>) {
      load_kernel(reinterpret_cast<const void*>(reduce_kernel<T, Op, true>), e);
      load_kernel(reinterpret_cast<const void*>(reduce_kernel<T, Op, false>), e);
    }
  });
  return static_cast<int>(e);
}

int launch_sum(coralDataType_t t, const ReduceArgs& r, cudaStream_t s);
int launch_prod(coralDataType_t t, const ReduceArgs& r, cudaStream_t s);
int launch_max(coralDataType_t t, const ReduceArgs& r, cudaStream_t s);
int launch_min(coralDataType_t t, const ReduceArgs& r, cudaStream_t s);
int preload_sum();
int launch_band(coralDataType_t t, const ReduceArgs& r, cudaStream_t s);
int launch_bor(coralDataType_t t, const ReduceArgs& r, cudaStream_t s);
int launch_bxor(coralDataType_t t, const ReduceArgs& r, cudaStream_t s);
int preload_bitwise();
int preload_prod();
int preload_max();
int preload_min();
int preload_premul();

}  // namespace coral::kernels::cuda::detail
