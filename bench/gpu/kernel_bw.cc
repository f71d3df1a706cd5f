// Reduction kernel bandwidth against cudaMemcpy device-to-device, measured in one run: 2 inputs
// -> 1 output, counting bytes read + written (3 x buffer for the kernel, 2 x for the copy).
// Usage: coral-kernel-bw [bytes per buffer, default 1G] [iterations, default 20]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "kernels/cuda/kernels.h"
#include "kernels/reduce.h"

#define CUDA_OK(call)                                                                            \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      return 1;                                                                                  \
    }                                                                                            \
  } while (0)

int main(int argc, char** argv) {
  const size_t bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 0) : (size_t{1} << 30);
  const int iters = argc > 2 ? std::atoi(argv[2]) : 20;
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::fprintf(stderr, "SKIP: no usable GPU\n");
    return 77;
  }
  char *a, *b, *out;
  CUDA_OK(cudaMalloc(&a, bytes));
  CUDA_OK(cudaMalloc(&b, bytes));
  CUDA_OK(cudaMalloc(&out, bytes));
  CUDA_OK(cudaMemset(a, 0, bytes));
  CUDA_OK(cudaMemset(b, 0, bytes));
  cudaEvent_t t0, t1;
  CUDA_OK(cudaEventCreate(&t0));
  CUDA_OK(cudaEventCreate(&t1));
  auto time_ms = [&](auto&& body) -> double {
    for (int i = 0; i < 3; ++i) body();  // warm-up
    cudaEventRecord(t0);
    for (int i = 0; i < iters; ++i) body();
    cudaEventRecord(t1);
    cudaEventSynchronize(t1);
    float ms = 0;
    cudaEventElapsedTime(&ms, t0, t1);
    return ms / iters;
  };
  const double copy_ms = time_ms([&] { cudaMemcpyAsync(out, a, bytes, cudaMemcpyDeviceToDevice, nullptr); });
  const double copy_gbs = 2.0 * bytes / (copy_ms * 1e-3) / 1e9;
  std::printf("buffer %zu bytes, %d iterations\n", bytes, iters);
  std::printf("%-26s %9.3f ms %8.1f GB/s (read + write)\n", "cudaMemcpy D2D", copy_ms, copy_gbs);
  int rc = 0;
  for (coralDataType_t t : {coralFloat32, coralBfloat16, coralFloat16, coralFloat64, coralInt32, coralFloat8e4m3}) {
    coral::kernels::cuda::ReduceArgs r;
    r.src[0] = a;
    r.src[1] = b;
    r.nsrc = 2;
    r.dst[0] = out;
    r.ndst = 1;
    r.n = bytes / coral::kernels::dtype_size(t);
    int err = 0;
    const double ms = time_ms([&] { err |= coral::kernels::cuda::reduce(t, coralSum, r, nullptr); });
    CUDA_OK(static_cast<cudaError_t>(err));
    const double gbs = 3.0 * bytes / (ms * 1e-3) / 1e9;
    std::printf("reduce sum %-15s %9.3f ms %8.1f GB/s = %5.1f%% of cudaMemcpy\n", coral::kernels::dtype_name(t), ms,
                gbs, 100.0 * gbs / copy_gbs);
  }
  cudaFree(a);
  cudaFree(b);
  cudaFree(out);
  return rc;
}
