// Prod for every dtype (one .cu per op family keeps builds parallel).
#include "kernels/cuda/reduce.cuh"

namespace coral::kernels::cuda::detail {
int launch_prod(coralDataType_t t, const ReduceArgs& r, cudaStream_t s) { return launch_op<Prod>(t, r, s); }
int preload_prod() { return preload_op<Prod>(); }
}  // namespace coral::kernels::cuda::detail
