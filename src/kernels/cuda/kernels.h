// Fused CUDA reductions, callable from plain C++ (no CUDA types here, so code built without
// nvcc can include it). Every call is asynchronous on `stream` (a cudaStream_t) and returns the
// launch's cudaError_t as an int (0: launched).
#pragma once
#include <coral/coral.h>

#include <cstddef>
#include <cstdint>

namespace coral::kernels::cuda {

// One kernel reads up to kMaxSrcs inputs and writes up to kMaxDsts outputs: the ring's
// recv-reduce-send writes the peer's slot and the local result in one pass, and the one-shot
// path reduces every rank's contribution at once.
constexpr int kMaxSrcs = 8;
constexpr int kMaxDsts = 2;

struct ReduceArgs {
  const void* src[kMaxSrcs] = {};
  int nsrc = 0;
  void* dst[kMaxDsts] = {};
  int ndst = 0;
  size_t n = 0;  // elements
};

// dst[j][i] = src[0][i] op ... op src[nsrc-1][i]. Half, bfloat16 and fp8 accumulate in fp32 and
// round once. coralAvg sums (scale() divides at the end). Outputs may alias inputs exactly.
int reduce(coralDataType_t t, coralRedOp_t op, const ReduceArgs& a, void* stream);
// dst[i] = src[i] / divisor (integers truncate).
int scale(coralDataType_t t, void* dst, const void* src, size_t n, int divisor, void* stream);
// dst[i] = src[i] * scalar (PreMulSum's pre-scaling; dst may be src), scalar one value of type t:
// in device memory, read when the kernel runs (device_scalar), or in host memory, read now (its
// bytes travel in the kernel's arguments). Half and fp8 types multiply in fp32 and round once;
// integers wrap.
int premul(coralDataType_t t, void* dst, const void* src, size_t n, const void* scalar, bool device_scalar,
           void* stream);
// dst[i] = src[i] for every dst (a multi-destination copy: one read, up to kMaxDsts writes).
int copy(const ReduceArgs& a, size_t bytes, void* stream);

// Loads every kernel now rather than at its first launch (see reduce.cuh: a lazy load can wait
// for a stream that is itself waiting for the launch). Returns a cudaError_t as int.
int preload();

// Holds stream until *flag >= value (where the driver lacks cuStreamWaitValue64). One thread
// polls the host-mapped word; the host's store reaches it over the bus.
int wait_geq(const volatile uint64_t* flag, uint64_t value, void* stream);

}  // namespace coral::kernels::cuda
