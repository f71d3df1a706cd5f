// Max for every dtype (one .cu per op family keeps builds parallel).
#include "kernels/cuda/reduce.cuh"

namespace coral::kernels::cuda::detail {
int launch_max(coralDataType_t t, const ReduceArgs& r, cudaStream_t s) { return launch_op<Max>(t, r, s); }
int preload_max() { return preload_op<Max>(); }
}  // namespace coral::kernels::cuda::detail
