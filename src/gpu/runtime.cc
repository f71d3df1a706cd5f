#include "gpu/runtime.h"

#include <cstring>
#include <mutex>

#include "core/error.h"
#include "core/log.h"

#if CORAL_HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime.h>

#include "kernels/cuda/kernels.h"
#endif

namespace coral::gpu {

#if CORAL_HAVE_CUDA

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

}  // namespace

void check(int err, const char* what) {
  if (err == cudaSuccess) return;
  auto e = static_cast<cudaError_t>(err);
  fail(coralUnhandledCudaError, fmt::format("{} failed: {} ({})", what, cudaGetErrorName(e), cudaGetErrorString(e)));
}

bool built() { return true; }
bool usable() { return probe().ok; }
std::string why_not() { return probe().why; }

int device_of(const void* p) {
  if (!p || !usable()) return -1;
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged ? a.device : -1;
}

int current_device() {
  int d = 0;
  check(cudaGetDevice(&d), "cudaGetDevice");
  return d;
}

void set_device(int device) { check(cudaSetDevice(device), "cudaSetDevice"); }

int device_count() {
  int n = 0;
  return usable() && cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

Stream::Stream() {
  cudaStream_t s;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  s_ = s;
}
Stream::~Stream() { cudaStreamDestroy(static_cast<cudaStream_t>(s_)); }
void Stream::sync_raw(void* s) { check(cudaStreamSynchronize(static_cast<cudaStream_t>(s)), "cudaStreamSynchronize"); }

Event::Event() {
  cudaEvent_t e;
  check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  e_ = e;
}
Event::~Event() { cudaEventDestroy(static_cast<cudaEvent_t>(e_)); }
void Event::record(void* stream) {
  check(cudaEventRecord(static_cast<cudaEvent_t>(e_), static_cast<cudaStream_t>(stream)), "cudaEventRecord");
}
void Event::sync() { check(cudaEventSynchronize(static_cast<cudaEvent_t>(e_)), "cudaEventSynchronize"); }

HostFlag::HostFlag() {
  void* h = nullptr;
  check(cudaHostAlloc(&h, 64, cudaHostAllocMapped | cudaHostAllocPortable), "cudaHostAlloc (stream flag)");
  host_ = static_cast<volatile uint64_t*>(h);
  *host_ = 0;
  check(cudaHostGetDevicePointer(&dev_, h, 0), "cudaHostGetDevicePointer (stream flag)");
}
HostFlag::~HostFlag() { cudaFreeHost(const_cast<uint64_t*>(host_)); }

void HostFlag::stream_wait_geq(void* stream, uint64_t value) {
  if (WaitValueFn f = wait_value_fn()) {
    CUresult r = f(static_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(dev_), value, CU_STREAM_WAIT_VALUE_GEQ);
    if (r == CUDA_SUCCESS) return;
  }
  check(kernels::cuda::wait_geq(static_cast<const volatile uint64_t*>(dev_), value, stream), "flag wait kernel");
}

void HostFlag::set(uint64_t value) {
  __atomic_store_n(const_cast<uint64_t*>(host_), value, __ATOMIC_RELEASE);
}

void* alloc_device(size_t bytes) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc");
  return p;
}
void free_device(void* p) {
  if (p) cudaFree(p);
}
void* alloc_pinned(size_t bytes) {
  void* p = nullptr;
  check(cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable), "cudaHostAlloc");
  return p;
}
void free_pinned(void* p) {
  if (p) cudaFreeHost(p);
}
void copy_async(void* dst, const void* src, size_t bytes, void* stream) {
  if (!bytes) return;
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, static_cast<cudaStream_t>(stream)), "cudaMemcpyAsync");
}

IpcHandle ipc_export(void* dev) {
  cudaIpcMemHandle_t h;
  check(cudaIpcGetMemHandle(&h, dev), "cudaIpcGetMemHandle");
  IpcHandle out;
  static_assert(sizeof h == sizeof out);
  std::memcpy(out.data(), &h, sizeof h);
  return out;
}
void* ipc_open(const IpcHandle& in) {
  cudaIpcMemHandle_t h;
  std::memcpy(&h, in.data(), sizeof h);
  void* p = nullptr;
  check(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle");
  return p;
}
void ipc_close(void* p) {
  if (p) cudaIpcCloseMemHandle(p);
}

#else  // no CUDA in this build

namespace {
[[noreturn]] void unavailable() { fail(coralUnhandledCudaError, "this build of Coral has no CUDA support (built without nvcc)"); }
}  // namespace

void check(int err, const char* what) {
  if (err) fail(coralUnhandledCudaError, fmt::format("{} failed: error {}", what, err));
}
bool built() { return false; }
bool usable() { return false; }
std::string why_not() { return "this build of Coral has no CUDA support (built without nvcc)"; }
int device_of(const void*) { return -1; }
int current_device() { unavailable(); }
int device_count() { return 0; }
void set_device(int) { unavailable(); }
Stream::Stream() { unavailable(); }
Stream::~Stream() = default;
void Stream::sync_raw(void*) {}
Event::Event() { unavailable(); }
Event::~Event() = default;
void Event::record(void*) {}
void Event::sync() {}
HostFlag::HostFlag() { unavailable(); }
HostFlag::~HostFlag() = default;
void HostFlag::stream_wait_geq(void*, uint64_t) {}
void HostFlag::set(uint64_t) {}
void* alloc_device(size_t) { unavailable(); }
void free_device(void*) {}
void* alloc_pinned(size_t) { unavailable(); }
void free_pinned(void*) {}
void copy_async(void*, const void*, size_t, void*) { unavailable(); }
IpcHandle ipc_export(void*) { unavailable(); }
void* ipc_open(const IpcHandle&) { unavailable(); }
void ipc_close(void*) {}

#endif

}  // namespace coral::gpu
