// Sum for every dtype (one .cu per op family keeps builds parallel).
#include "kernels/cuda/reduce.cuh"

namespace coral::kernels::cuda::detail {
int launch_sum(coralDataType_t t, const ReduceArgs& r, cudaStream_t s) { return launch_op<Sum>(t, r, s); }
int preload_sum() { return preload_op<Sum>(); }
}  // namespace coral::kernels::cuda::detail
