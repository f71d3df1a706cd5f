// Run under coral-run on a GPU machine: every collective case of mp_check, on device buffers
// and a stream (cuda_ipc between ranks of one host, several ranks per GPU allowed), exact checks;
// then stream ordering (calls queued back to back, one synchronise) and point-to-point.
// Exits 77 (skip) without a usable GPU.
#include <coral/coral.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/checks.h"

#define CUDA_OK(call)                                                                        \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

namespace {

size_t elems(checks::Coll c, size_t n, int p, bool send) {
  if (c == checks::Coll::ReduceScatter && send) return n * p;
  if (c == checks::Coll::AllGather && !send) return n * p;
  return n;
}

// Mirrors the host buffers of a case on the GPU (keeping in-place aliasing), runs the call on
// stream, and copies the results back. One guard byte past a separate recvbuff catches overruns.
coralResult_t run_on_device(coralComm_t comm, cudaStream_t stream, int p, checks::Coll c, const void* s, void* r,
                            size_t n, coralDataType_t t, coralRedOp_t op, int root) {
  const size_t es = exact::size_of(t);
  const auto* sb = static_cast<const char*>(s);
  auto* rb = static_cast<char*>(r);
  const size_t sbytes = elems(c, n, p, true) * es, rbytes = elems(c, n, p, false) * es;
  const bool overlap = sb && rb && sb < rb + rbytes + 1 && rb < sb + sbytes + 1;
  const char* lo = overlap ? std::min<const char*>(sb, rb) : nullptr;
  const char* hi = overlap ? std::max<const char*>(sb + sbytes, rb + rbytes) : nullptr;
  char *dev_s = nullptr, *dev_r = nullptr, *block = nullptr;
  if (overlap) {
    CUDA_OK(cudaMalloc(&block, hi - lo + 1));
    CUDA_OK(cudaMemcpy(block, lo, hi - lo, cudaMemcpyHostToDevice));
    dev_s = block + (sb - lo);
    dev_r = block + (rb - lo);
  } else {
    CUDA_OK(cudaMalloc(&dev_s, sbytes + 1));
    CUDA_OK(cudaMalloc(&dev_r, rbytes + 1));
    if (sb) CUDA_OK(cudaMemcpy(dev_s, sb, sbytes, cudaMemcpyHostToDevice));
    if (rb) CUDA_OK(cudaMemcpy(dev_r, rb, rbytes + 1, cudaMemcpyHostToDevice));
  }
  coralResult_t rc = coralInternalError;
  switch (c) {
    case checks::Coll::AllReduce: rc = coralAllReduce(dev_s, dev_r, n, t, op, comm, stream); break;
    case checks::Coll::ReduceScatter: rc = coralReduceScatter(dev_s, dev_r, n, t, op, comm, stream); break;
    case checks::Coll::AllGather: rc = coralAllGather(dev_s, dev_r, n, t, comm, stream); break;
    case checks::Coll::Broadcast: rc = coralBroadcast(dev_s, dev_r, n, t, root, comm, stream); break;
    case checks::Coll::Reduce: rc = coralReduce(dev_s, dev_r, n, t, op, root, comm, stream); break;
  }
  CUDA_OK(cudaStreamSynchronize(stream));
  coralResult_t async = coralSuccess;
  coralCommGetAsyncError(comm, &async);
  if (rc == coralSuccess) rc = async;
  if (rb) CUDA_OK(cudaMemcpy(rb, dev_r, overlap ? rbytes : rbytes + 1, cudaMemcpyDeviceToHost));
  if (overlap) {
    cudaFree(block);
  } else {
    cudaFree(dev_s);
    cudaFree(dev_r);
  }
  return rc;
}

int fail(const char* what, coralComm_t comm) {
  std::fprintf(stderr, "FAIL %s (%s)\n", what, coralGetLastError(comm));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::fprintf(stderr, "SKIP: no usable GPU\n");
    return 77;
  }
  if (argc > 1 && std::string(argv[1]) == "--probe") return 0;
  const char* lr = std::getenv("CORAL_LOCAL_RANK");
  CUDA_OK(cudaSetDevice((lr ? std::atoi(lr) : 0) % ndev));
  coralComm_t comm;
  if (coralCommInitEnv(&comm) != coralSuccess) {
    std::fprintf(stderr, "init failed: %s\n", coralGetLastError(nullptr));
    return 2;
  }
  int rank, p;
  coralCommUserRank(comm, &rank);
  coralCommCount(comm, &p);
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  checks::Runner run = [&](checks::Coll c, const void* s, void* r, size_t n, coralDataType_t t, coralRedOp_t op,
                           int root) { return run_on_device(comm, stream, p, c, s, r, n, t, op, root); };
  const char* q = std::getenv("MP_DEVICE_QUICK");
  const bool quick = q && *q && std::string(q) != "0";  // three dtypes instead of all
  int cases = 0;
  for (const checks::Case& c : checks::all_cases(p)) {
    if (quick && c.t != coralFloat32 && c.t != coralBfloat16 && c.t != coralInt64) continue;
    std::string e = checks::run_case(run, rank, p, c);
    if (!e.empty()) return fail(e.c_str(), comm);
    cases++;
  }
  // Stream order: three in-place all-reduces queued back to back, one synchronise. Each
  // multiplies by p, so a call that ran before its predecessor finished shows.
  const size_t n = (size_t{3} << 20) + 5;  // several cuda_ipc slots
  std::vector<float> host(n, 1.0f + rank);
  float* d;
  CUDA_OK(cudaMalloc(&d, n * sizeof(float)));
  CUDA_OK(cudaMemcpyAsync(d, host.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));
  for (int k = 0; k < 3; ++k)
    if (coralAllReduce(d, d, n, coralFloat32, coralSum, comm, stream) != coralSuccess) return fail("queued all-reduce", comm);
  CUDA_OK(cudaMemcpyAsync(host.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  const float expect = static_cast<float>(p * (p + 1) / 2) * p * p;
  for (size_t i = 0; i < n; i += 4099)
    if (host[i] != expect) return fail("queued all-reduces out of order", comm);
  // Ring of device-buffer sends.
  if (p > 1) {
    int32_t *out, *in;
    CUDA_OK(cudaMalloc(&out, 1001 * sizeof(int32_t)));
    CUDA_OK(cudaMalloc(&in, 1001 * sizeof(int32_t)));
    std::vector<int32_t> v(1001, rank);
    CUDA_OK(cudaMemcpy(out, v.data(), v.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
    int next = (rank + 1) % p, prev = (rank + p - 1) % p;
    coralResult_t a, b;
    if (rank % 2 == 0) {
      a = coralSend(out, 1001, coralInt32, next, comm, stream);
      b = coralRecv(in, 1001, coralInt32, prev, comm, stream);
    } else {
      b = coralRecv(in, 1001, coralInt32, prev, comm, stream);
      a = coralSend(out, 1001, coralInt32, next, comm, stream);
    }
    CUDA_OK(cudaStreamSynchronize(stream));
    CUDA_OK(cudaMemcpy(v.data(), in, v.size() * sizeof(int32_t), cudaMemcpyDeviceToHost));
    if (a || b || v[1000] != prev) return fail("device send/recv", comm);
    cudaFree(out);
    cudaFree(in);
  }
  coralResult_t async = coralSuccess;
  coralCommGetAsyncError(comm, &async);
  if (async != coralSuccess) return fail("async error", comm);
  cudaFree(d);
  cudaStreamDestroy(stream);
  coralCommDestroy(comm);
  std::printf("rank %d: %d device collective cases passed\n", rank, cases);
  return 0;
}
