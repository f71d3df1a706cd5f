// Min for every dtype (one .cu per op family keeps builds parallel).
#include "kernels/cuda/reduce.cuh"

namespace coral::kernels::cuda::detail {
int launch_min(coralDataType_t t, const ReduceArgs& r, cudaStream_t s) { return launch_op<Min>(t, r, s); }
int preload_min() { return preload_op<Min>(); }
}  // namespace coral::kernels::cuda::detail
