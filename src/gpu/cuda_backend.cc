// The real CUDA runtime behind gpu/runtime.h (a build with CUDA; see gpu/backend.h).
#if CORAL_HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstring>
#include <string>

#include "base/log.h"
#include "gpu/backend.h"
#include "kernels/cuda/kernels.h"

namespace coral::gpu {

namespace {

struct Probe {
  bool ok = false;
  std::string why;
};

const Probe& probe() {
  static const Probe p = [] {
    Probe r;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      r.why = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
      cudaGetLastError();  // the error is sticky only for this query
    } else if (n == 0) {
      r.why = "no CUDA device";
    } else {
      r.ok = true;
    }
    log::info(log::Init, "cuda: {}", r.ok ? fmt::format("{} device(s)", n) : r.why);
    return r;
  }();
  return p;
}

using WaitValueFn = CUresult (*)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);

// cuStreamWaitValue64 through the runtime (no link against libcuda); nullptr where the driver
// lacks it, and a kernel polls the word instead.
WaitValueFn wait_value_fn() {
  static WaitValueFn fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuStreamWaitValue64", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      f = nullptr;
    return reinterpret_cast<WaitValueFn>(f);
  }();
  return fn;
}

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t as_event(void* e) { return static_cast<cudaEvent_t>(e); }

bool usable() { return probe().ok; }
std::string why_not() { return probe().why; }

int device_of(const void* p) {
  if (!probe().ok) return -1;
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged ? a.device : -1;
}

void load_kernels() { check(kernels::cuda::preload(), "loading the CUDA kernels (cudaFuncGetAttributes)"); }

int current_device() {
  int d = 0;
  check(cudaGetDevice(&d), "cudaGetDevice");
  return d;
}

int device_count() {
  int n = 0;
  if (!probe().ok || cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
  return n;
}

void set_device(int device) { check(cudaSetDevice(device), "cudaSetDevice"); }

void enable_peer_access(int peer_device) {
  if (peer_device == current_device()) return;
  const cudaError_t e = cudaDeviceEnablePeerAccess(peer_device, 0);
  if (e == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();  // not sticky: clear it, or the next launch's check reports it
    return;
  }
  check(e, "cudaDeviceEnablePeerAccess");
}

bool stream_capturing(void* s) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  const cudaError_t e = cudaStreamIsCapturing(as_stream(s), &st);
  if (e == cudaErrorStreamCaptureImplicit) {  // the legacy stream, while another one captures
    cudaGetLastError();
    return true;
  }
  check(e, "cudaStreamIsCapturing");
  return st != cudaStreamCaptureStatusNone;
}

void relax_capture() {
  cudaStreamCaptureMode m = cudaStreamCaptureModeRelaxed;
  check(cudaThreadExchangeStreamCaptureMode(&m), "cudaThreadExchangeStreamCaptureMode");
}

void* stream_create() {
  // Coral's streams carry communication that other ranks wait for: the greatest priority, as
  // torch offers NCCL's, so the caller's kernels do not delay it.
  int least = 0, greatest = 0;
  if (cudaDeviceGetStreamPriorityRange(&least, &greatest) != cudaSuccess) {
    (void)cudaGetLastError();  // no priorities: the default one, and no stale error left behind
    greatest = 0;
  }
  cudaStream_t s;
  check(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest), "cudaStreamCreateWithPriority");
  return s;
}
void stream_destroy(void* s) { cudaStreamDestroy(as_stream(s)); }

bool stream_query(void* s) {
  const cudaError_t r = cudaStreamQuery(as_stream(s));
  if (r == cudaErrorNotReady) return false;  // not an error (and launches clear stale ones first)
  check(r, "cudaStreamQuery");
  return true;
}

void* event_create() {
  cudaEvent_t e;
  check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  return e;
}
void event_destroy(void* e) { cudaEventDestroy(as_event(e)); }
void event_record(void* e, void* stream) { check(cudaEventRecord(as_event(e), as_stream(stream)), "cudaEventRecord"); }
bool event_query(void* e) {
  const cudaError_t r = cudaEventQuery(as_event(e));
  if (r == cudaErrorNotReady) return false;  // not an error (and launches clear stale ones first)
  check(r, "cudaEventQuery");
  return true;
}

void flag_alloc(volatile uint64_t*& host, void*& dev) {
  void* h = nullptr;
  check(cudaHostAlloc(&h, 64, cudaHostAllocMapped | cudaHostAllocPortable), "cudaHostAlloc (stream flag)");
  host = static_cast<volatile uint64_t*>(h);
  *host = 0;
  check(cudaHostGetDevicePointer(&dev, h, 0), "cudaHostGetDevicePointer (stream flag)");
}

void flag_free(volatile uint64_t* host) {
  // A stream may still be polling the word: let the device finish before the memory goes.
  cudaDeviceSynchronize();
  cudaFreeHost(const_cast<uint64_t*>(host));
}

void flag_wait(void* stream, const volatile uint64_t*, void* dev, uint64_t value) {
  if (WaitValueFn f = wait_value_fn()) {
    CUresult r = f(static_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(dev), value, CU_STREAM_WAIT_VALUE_GEQ);
    if (r == CUDA_SUCCESS) return;
  }
  check(kernels::cuda::wait_geq(static_cast<const volatile uint64_t*>(dev), value, stream), "flag wait kernel");
}

void* alloc_device(size_t bytes) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc");
  return p;
}
void free_device(void* p) { cudaFree(p); }

void* alloc_pinned(size_t bytes) {
  void* p = nullptr;
  check(cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable), "cudaHostAlloc");
  return p;
}
void free_pinned(void* p) { cudaFreeHost(p); }

void copy_async(void* dst, const void* src, size_t bytes, void* stream) {
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, as_stream(stream)), "cudaMemcpyAsync");
}

IpcHandle ipc_export(void* dev) {
  IpcHandle out{};
  cudaIpcMemHandle_t h;
  check(cudaIpcGetMemHandle(&h, dev), "cudaIpcGetMemHandle");
  static_assert(sizeof h == sizeof out);
  std::memcpy(out.data(), &h, sizeof h);
  return out;
}

void* ipc_open(const IpcHandle& in) {
  void* p = nullptr;
  cudaIpcMemHandle_t h;
  std::memcpy(&h, in.data(), sizeof h);
  check(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle");
  return p;
}
void ipc_close(void* p) { cudaIpcCloseMemHandle(p); }

constexpr Backend kCuda{
    .usable = usable,
    .why_not = why_not,
    .abort_on_parked_release = false,
    .device_of = device_of,
    .load_kernels = load_kernels,
    .current_device = current_device,
    .device_count = device_count,
    .set_device = set_device,
    .enable_peer_access = enable_peer_access,
    .stream_capturing = stream_capturing,
    .relax_capture = relax_capture,
    .stream_create = stream_create,
    .stream_destroy = stream_destroy,
    .stream_query = stream_query,
    .event_create = event_create,
    .event_destroy = event_destroy,
    .event_record = event_record,
    .event_query = event_query,
    .flag_alloc = flag_alloc,
    .flag_free = flag_free,
    .flag_wait = flag_wait,
    .alloc_device = alloc_device,
    .free_device = free_device,
    .alloc_pinned = alloc_pinned,
    .free_pinned = free_pinned,
    .copy_async = copy_async,
    .ipc_export = ipc_export,
    .ipc_open = ipc_open,
    .ipc_close = ipc_close,
};

}  // namespace

const Backend& cuda_backend() { return kCuda; }

}  // namespace coral::gpu
#endif  // CORAL_HAVE_CUDA
