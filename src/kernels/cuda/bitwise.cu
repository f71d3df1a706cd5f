// Bitwise and, or and xor for the integer dtypes (one .cu per op family keeps builds parallel).
#include "kernels/cuda/reduce.cuh"

namespace coral::kernels::cuda::detail {
int launch_band(coralDataType_t t, const ReduceArgs& r, cudaStream_t s) { return launch_int_op<Band>(t, r, s); }
int launch_bor(coralDataType_t t, const ReduceArgs& r, cudaStream_t s) { return launch_int_op<Bor>(t, r, s); }
int launch_bxor(coralDataType_t t, const ReduceArgs& r, cudaStream_t s) { return launch_int_op<Bxor>(t, r, s); }
int preload_bitwise() {
  int e = preload_op<Band, true>();
  if (!e) e = preload_op<Bor, true>();
  if (!e) e = preload_op<Bxor, true>();
  return e;
}
}  // namespace coral::kernels::cuda::detail
