// Run under coral-run: every collective case of mp_check, on device buffers and a stream
// (cuda_ipc between ranks of one host, several ranks per GPU allowed), exact checks; then stream
// ordering (calls queued back to back, one synchronise) and point-to-point. Memory and streams go
// through Coral's gpu runtime wrapper, so the same program runs on a GPU and, with
// CORAL_GPU_EMULATE=1, on the stand-in GPU of machines without one. Exits 77 without either.
#include <coral/coral.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

#include "base/error.h"
#include "common/checks.h"
#include "gpu/runtime.h"

namespace {

namespace gpu = coral::gpu;

// Blocking copies for the test's own staging (any direction).
void copy(void* dst, const void* src, size_t bytes, void* stream) {
  gpu::copy_async(dst, src, bytes, stream);
  gpu::Stream::sync_raw(stream);
}

char* dev_alloc(size_t bytes) { return static_cast<char*>(gpu::alloc_device(bytes)); }

size_t elems(checks::Coll c, size_t n, int p, bool send) {
  if (c == checks::Coll::ReduceScatter && send) return n * p;
  if (c == checks::Coll::AllGather && !send) return n * p;
  return n;
}

// Mirrors the host buffers of a case on the GPU (keeping in-place aliasing), runs the call on
// stream, and copies the results back. One guard byte past a separate recvbuff catches overruns.
coralResult_t run_on_device(coralComm_t comm, void* stream, int p, checks::Coll c, const void* s, void* r, size_t n,
                            coralDataType_t t, coralRedOp_t op, int root) {
  const size_t es = exact::size_of(t);
  const auto* sb = static_cast<const char*>(s);
  auto* rb = static_cast<char*>(r);
  const size_t sbytes = elems(c, n, p, true) * es, rbytes = elems(c, n, p, false) * es;
  const bool overlap = sb && rb && sb < rb + rbytes + 1 && rb < sb + sbytes + 1;
  const char* lo = overlap ? std::min<const char*>(sb, rb) : nullptr;
  const char* hi = overlap ? std::max<const char*>(sb + sbytes, rb + rbytes) : nullptr;
  char *dev_s = nullptr, *dev_r = nullptr, *block = nullptr;
  if (overlap) {
    block = dev_alloc(hi - lo + 1);
    copy(block, lo, hi - lo, stream);
    dev_s = block + (sb - lo);
    dev_r = block + (rb - lo);
  } else {
    dev_s = dev_alloc(sbytes + 1);
    dev_r = dev_alloc(rbytes + 1);
    if (sb) copy(dev_s, sb, sbytes, stream);
    if (rb) copy(dev_r, rb, rbytes + 1, stream);
  }
  coralResult_t rc = coralInternalError;
  switch (c) {
    case checks::Coll::AllReduce:
      rc = coralAllReduce(dev_s, dev_r, n, t, op, comm, stream);
      break;
    case checks::Coll::ReduceScatter:
      rc = coralReduceScatter(dev_s, dev_r, n, t, op, comm, stream);
      break;
    case checks::Coll::AllGather:
      rc = coralAllGather(dev_s, dev_r, n, t, comm, stream);
      break;
    case checks::Coll::Broadcast:
      rc = coralBroadcast(dev_s, dev_r, n, t, root, comm, stream);
      break;
    case checks::Coll::Reduce:
      rc = coralReduce(dev_s, dev_r, n, t, op, root, comm, stream);
      break;
    default:  // the newer collectives run through coral-bench --device (tests/mp/coral_bench.sh)
      break;
  }
  gpu::Stream::sync_raw(stream);
  coralResult_t async = coralSuccess;
  coralCommGetAsyncError(comm, &async);
  if (rc == coralSuccess) rc = async;
  if (rb) copy(rb, dev_r, overlap ? rbytes : rbytes + 1, stream);
  if (overlap) {
    gpu::free_device(block);
  } else {
    gpu::free_device(dev_s);
    gpu::free_device(dev_r);
  }
  return rc;
}

int fail(const char* what, coralComm_t comm) {
  std::fprintf(stderr, "FAIL %s (%s)\n", what, coralGetLastError(comm));
  return 1;
}

// Every rank sends right and receives left of 3 MiB device buffers in one group, sends first:
// one by one the sends would wait for each other.
std::string group_ring(coralComm_t comm, void* stream, int rank, int p) {
  const size_t n = (size_t{3} << 20) / 4;
  std::vector<int32_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<int32_t>(rank * 1000003 + i);
  char* out = dev_alloc(n * 4);
  char* in = dev_alloc(n * 4);
  copy(out, v.data(), n * 4, stream);
  const int next = (rank + 1) % p, prev = (rank + p - 1) % p;
  coralGroupStart();
  coralResult_t a = coralSend(out, n, coralInt32, next, comm, stream);
  coralResult_t b = coralRecv(in, n, coralInt32, prev, comm, stream);
  coralResult_t c = coralGroupEnd();
  copy(v.data(), in, n * 4, stream);
  gpu::free_device(out);
  gpu::free_device(in);
  if (a || b || c) return "device group ring: a call failed";
  for (size_t i = 0; i < n; i += 977)
    if (v[i] != static_cast<int32_t>(prev * 1000003 + i)) return "device group ring: wrong data";
  return "";
}

// No group: every rank sends to both neighbours, then receives from both (torch 2's isend and
// irecv on CUDA tensors, one call each), 3 MiB apiece, so each send waits for the peer's receive
// queued behind that peer's sends. Then the stream overwrites the send buffer and every rank
// sends right before it receives left: the second send must carry the new data.
std::string ungrouped_exchange(coralComm_t comm, void* stream, int rank, int p) {
  const size_t n = (size_t{3} << 20) / 4;
  auto pattern = [](int r, int round, size_t i) { return static_cast<int32_t>(r * 1000003 + round * 7 + i); };
  std::vector<int32_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = pattern(rank, 1, i);
  char* out = dev_alloc(n * 4);
  char* fresh = dev_alloc(n * 4);
  char* in_prev = dev_alloc(n * 4);
  char* in_next = dev_alloc(n * 4);
  copy(out, v.data(), n * 4, stream);
  for (size_t i = 0; i < n; ++i) v[i] = pattern(rank, 2, i);
  copy(fresh, v.data(), n * 4, stream);
  const int next = (rank + 1) % p, prev = (rank + p - 1) % p;
  coralResult_t rc[6];
  rc[0] = coralSend(out, n, coralInt32, next, comm, stream);
  rc[1] = coralSend(out, n, coralInt32, prev, comm, stream);
  rc[2] = coralRecv(in_prev, n, coralInt32, prev, comm, stream);
  rc[3] = coralRecv(in_next, n, coralInt32, next, comm, stream);
  gpu::copy_async(out, fresh, n * 4, stream);
  rc[4] = coralSend(out, n, coralInt32, next, comm, stream);
  rc[5] = coralRecv(in_prev, n, coralInt32, prev, comm, stream);
  gpu::Stream::sync_raw(stream);
  std::string err;
  for (coralResult_t r : rc)
    if (r != coralSuccess) err = "ungrouped exchange: a call failed";
  coralResult_t async = coralSuccess;
  coralCommGetAsyncError(comm, &async);
  if (err.empty() && async != coralSuccess) err = "ungrouped exchange: asynchronous error";
  std::vector<int32_t> got_prev(n), got_next(n);
  copy(got_prev.data(), in_prev, n * 4, stream);
  copy(got_next.data(), in_next, n * 4, stream);
  for (size_t i = 0; err.empty() && i < n; i += 997)
    if (got_next[i] != pattern(next, 1, i) || got_prev[i] != pattern(prev, 2, i))
      err = "ungrouped exchange: wrong data (a send did not wait for its stream, or receives crossed)";
  for (char* b : {out, fresh, in_prev, in_next}) gpu::free_device(b);
  return err;
}

// A send outside a group meets a receive inside one, and a group mixes a host-buffer send with
// a device-buffer receive: both take one path, so they match.
std::string mixed_p2p(coralComm_t comm, void* stream, int rank, int p) {
  const size_t n = (size_t{1} << 20) + 7;
  std::vector<int32_t> v(n), host_out(n);
  for (size_t i = 0; i < n; ++i) host_out[i] = static_cast<int32_t>(rank * 7919 + i);
  char* dev = dev_alloc(n * 4);
  copy(dev, host_out.data(), n * 4, stream);
  coralResult_t a = coralSuccess, b = coralSuccess, c = coralSuccess;
  if (rank == 0) a = coralSend(dev, n, coralInt32, 1, comm, stream);
  if (rank == 1) {
    coralGroupStart();
    b = coralRecv(dev, n, coralInt32, 0, comm, stream);
    c = coralGroupEnd();
  }
  copy(v.data(), dev, n * 4, stream);
  if (a || b || c) return "send outside a group to a receive inside one: a call failed";
  if (rank == 1 && (v[5] != 5 || v[n - 1] != static_cast<int32_t>(n - 1))) return "outside/inside group: wrong data";
  const int next = (rank + 1) % p, prev = (rank + p - 1) % p;
  coralGroupStart();
  a = coralSend(host_out.data(), n, coralInt32, next, comm, nullptr);
  b = coralRecv(dev, n, coralInt32, prev, comm, stream);
  c = coralGroupEnd();
  copy(v.data(), dev, n * 4, stream);
  gpu::free_device(dev);
  if (a || b || c) return "host send with device receive in one group: a call failed";
  for (size_t i = 0; i < n; i += 4093)
    if (v[i] != static_cast<int32_t>(prev * 7919 + i)) return "host send with device receive: wrong data";
  return "";
}

// PreMulSum on device buffers with a device-resident scalar (rank + 1) and a host one (2).
std::string premul_device(coralComm_t comm, void* stream, int rank, int p) {
  const size_t n = 100003;
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i % 8);
  char* x = dev_alloc(n * 4);
  char* scalar = dev_alloc(4);
  float s = static_cast<float>(rank + 1), two = 2;
  copy(scalar, &s, 4, stream);
  coralRedOp_t dev_op, host_op;
  if (coralRedOpCreatePreMulSum(&dev_op, scalar, coralFloat32, coralScalarDevice, comm) != coralSuccess ||
      coralRedOpCreatePreMulSum(&host_op, &two, coralFloat32, coralScalarHostImmediate, comm) != coralSuccess)
    return "PreMulSum create";
  copy(x, v.data(), n * 4, stream);
  if (coralAllReduce(x, x, n, coralFloat32, dev_op, comm, stream) != coralSuccess ||
      coralAllReduce(x, x, n, coralFloat32, host_op, comm, stream) != coralSuccess)
    return "PreMulSum all-reduce";
  copy(v.data(), x, n * 4, stream);
  coralRedOpDestroy(dev_op, comm);
  coralRedOpDestroy(host_op, comm);
  gpu::free_device(x);
  gpu::free_device(scalar);
  // sum_q (q+1) * (i%8), then times 2 summed over p ranks.
  for (size_t i = 0; i < n; i += 13)
    if (v[i] != static_cast<float>((i % 8) * p * (p + 1) / 2 * 2 * p)) return "PreMulSum on device: wrong value";
  return "";
}

int run(int argc, char** argv) {
  if (!gpu::usable()) {
    std::fprintf(stderr, "SKIP: no usable GPU (%s); CORAL_GPU_EMULATE=1 runs a stand-in\n", gpu::why_not().c_str());
    return 77;
  }
  if (argc > 1 && std::string(argv[1]) == "--probe") return 0;
  // A process killed earlier with this pid left its stand-in device memory behind; allocations
  // must step past it (it made CI's coral_bench fail once).
  std::vector<std::string> leftovers;
  if (std::getenv("CORAL_GPU_EMULATE"))
    for (int i = 0; i < 3; ++i) {
      leftovers.push_back("/dev/shm/coral-emu-" + std::to_string(getpid()) + "-" + std::to_string(i));
      if (FILE* f = std::fopen(leftovers.back().c_str(), "w")) std::fclose(f);
    }
  struct Remove {
    std::vector<std::string>& paths;
    ~Remove() {
      for (auto& path : paths) std::remove(path.c_str());
    }
  } remove_leftovers{leftovers};
  const char* lr = std::getenv("CORAL_LOCAL_RANK");
  gpu::set_device((lr ? std::atoi(lr) : 0) % gpu::device_count());
  int rank, p;
  coralComm_t comm = checks::init_from_env(&rank, &p);
  if (!comm) return 2;
  gpu::Stream owned;
  void* stream = owned.get();
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
  char* d = dev_alloc(n * sizeof(float));
  gpu::copy_async(d, host.data(), n * sizeof(float), stream);
  for (int k = 0; k < 3; ++k)
    if (coralAllReduce(d, d, n, coralFloat32, coralSum, comm, stream) != coralSuccess)
      return fail("queued all-reduce", comm);
  gpu::copy_async(host.data(), d, n * sizeof(float), stream);
  gpu::Stream::sync_raw(stream);
  const float expect = static_cast<float>(p * (p + 1) / 2) * p * p;
  for (size_t i = 0; i < n; i += 4099)
    if (host[i] != expect) return fail("queued all-reduces out of order", comm);
  // Ring of device-buffer sends.
  if (p > 1) {
    char* out = dev_alloc(1001 * sizeof(int32_t));
    char* in = dev_alloc(1001 * sizeof(int32_t));
    std::vector<int32_t> v(1001, rank);
    copy(out, v.data(), v.size() * sizeof(int32_t), stream);
    int next = (rank + 1) % p, prev = (rank + p - 1) % p;
    coralResult_t a, b;
    if (rank % 2 == 0) {
      a = coralSend(out, 1001, coralInt32, next, comm, stream);
      b = coralRecv(in, 1001, coralInt32, prev, comm, stream);
    } else {
      b = coralRecv(in, 1001, coralInt32, prev, comm, stream);
      a = coralSend(out, 1001, coralInt32, next, comm, stream);
    }
    copy(v.data(), in, v.size() * sizeof(int32_t), stream);
    if (a || b || v[1000] != prev) return fail("device send/recv", comm);
    gpu::free_device(out);
    gpu::free_device(in);
  }
  if (std::string e = group_ring(comm, stream, rank, p); !e.empty()) return fail(e.c_str(), comm);
  if (std::string e = premul_device(comm, stream, rank, p); !e.empty()) return fail(e.c_str(), comm);
  if (p > 1)
    if (std::string e = mixed_p2p(comm, stream, rank, p); !e.empty()) return fail(e.c_str(), comm);
  // A caller that waits on the host for each call (CUDA_DEVICE_MAX_CONNECTIONS=1) cannot post
  // its receives while its first send waits for the peer's: as with NCCL, that needs a group.
  const char* wait = std::getenv("CORAL_GPU_STREAM_WAIT");
  const char* conns = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  const bool host_wait =
      wait && *wait && std::string(wait) != "auto" ? std::string(wait) == "host" : conns && std::string(conns) == "1";
  if (p > 1 && !host_wait)
    if (std::string e = ungrouped_exchange(comm, stream, rank, p); !e.empty()) return fail(e.c_str(), comm);
  coralResult_t async = coralSuccess;
  coralCommGetAsyncError(comm, &async);
  if (async != coralSuccess) return fail("async error", comm);
  gpu::free_device(d);
  coralCommDestroy(comm);
  std::printf("rank %d: %d device collective cases passed\n", rank, cases);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const coral::Error& e) {
    std::fprintf(stderr, "FAIL %s\n", e.what());
    return 1;
  }
}
