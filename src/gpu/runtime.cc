#include "gpu/runtime.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/error.h"
#include "base/log.h"
#include "gpu/emulate.h"

#if CORAL_HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime.h>

#include "kernels/cuda/kernels.h"
#define CORAL_CUDA(real) real
#define CORAL_CUDA_RELEASE(real) real
#else
// Without CUDA every entry point that needs a GPU fails with a clear message; releases (called
// from destructors, never with anything to release) do nothing.
#define CORAL_CUDA(real) unavailable()
#define CORAL_CUDA_RELEASE(real) ((void)0)
#endif

namespace coral::gpu {

namespace {

[[maybe_unused]] [[noreturn]] void unavailable() {
  fail(coralUnhandledCudaError, "this build of Coral has no CUDA support (built without nvcc)");
}

#if CORAL_HAVE_CUDA
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
#endif

thread_local const HostFlag* t_progress_flag = nullptr;

// Calls that take the driver's context lock for writing (allocate, free, create, destroy).
void may_allocate(const char* what) {
  if (t_progress_flag && t_progress_flag->parked())
    fail(coralInternalError, fmt::format("{} on the progress thread while a caller's stream waits for it "
                                         "(a deadlock in the CUDA driver): allocate before parking", what));
}
void may_release(const char* what) {
  if (!t_progress_flag || !t_progress_flag->parked()) return;
  const std::string msg =
      fmt::format("{} on the progress thread while a caller's stream waits for it: this can deadlock in the CUDA driver",
                  what);
  if (emu::enabled()) {  // the emulated GPU runs in tests: make the mistake loud
    std::fprintf(stderr, "coral: %s\n", msg.c_str());
    std::abort();
  }
  log::warn(log::Coll, "{}", msg);
}

}  // namespace

ProgressScope::ProgressScope(const HostFlag* flag) : prev_(t_progress_flag) { t_progress_flag = flag; }
ProgressScope::~ProgressScope() { t_progress_flag = prev_; }

void check(int err, const char* what) {
  if (err == 0) return;
#if CORAL_HAVE_CUDA
  auto e = static_cast<cudaError_t>(err);
  fail(coralUnhandledCudaError, fmt::format("{} failed: {} ({})", what, cudaGetErrorName(e), cudaGetErrorString(e)));
#else
  fail(coralUnhandledCudaError, fmt::format("{} failed: error {}", what, err));
#endif
}

bool built() {
#if CORAL_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

bool usable() {
  if (emu::enabled()) return true;
#if CORAL_HAVE_CUDA
  return probe().ok;
#else
  return false;
#endif
}

std::string why_not() {
  if (emu::enabled()) return "";
#if CORAL_HAVE_CUDA
  return probe().why;
#else
  return "this build of Coral has no CUDA support (built without nvcc)";
#endif
}

int device_of(const void* p) {
  if (!p) return -1;
  if (emu::enabled()) return emu::device_of(p);
#if CORAL_HAVE_CUDA
  if (!usable()) return -1;
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged ? a.device : -1;
#else
  return -1;
#endif
}

void load_kernels() {
  may_allocate("loading the CUDA kernels");
  if (emu::enabled()) return;
  CORAL_CUDA(check(kernels::cuda::preload(), "loading the CUDA kernels (cudaFuncGetAttributes)"));
}
int current_device() {
  if (emu::enabled()) return 0;
  int d = 0;
  CORAL_CUDA(check(cudaGetDevice(&d), "cudaGetDevice"));
  return d;
}

void set_device(int device) {
  if (emu::enabled()) return;
  CORAL_CUDA(check(cudaSetDevice(device), "cudaSetDevice"));
  (void)device;
}

int device_count() {
  if (emu::enabled()) return 1;
  int n = 0;
#if CORAL_HAVE_CUDA
  if (!usable() || cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
#endif
  return n;
}

Stream::Stream() {
  may_allocate("cudaStreamCreate");
  if (emu::enabled()) {
    s_ = emu::stream_create();
    return;
  }
#if CORAL_HAVE_CUDA
  cudaStream_t s;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  s_ = s;
#else
  unavailable();
#endif
}

Stream::~Stream() {
  may_release("cudaStreamDestroy");
  if (emu::enabled()) {
    emu::stream_destroy(s_);
    return;
  }
  CORAL_CUDA_RELEASE(cudaStreamDestroy(static_cast<cudaStream_t>(s_)));
}

void Stream::sync_raw(void* s) {
  if (emu::enabled()) return emu::stream_sync(s);
  CORAL_CUDA(check(cudaStreamSynchronize(static_cast<cudaStream_t>(s)), "cudaStreamSynchronize"));
  (void)s;
}

// Emulated work completes when issued: events have nothing to wait for.
Event::Event() {
  may_allocate("cudaEventCreate");
  if (emu::enabled()) return;
#if CORAL_HAVE_CUDA
  cudaEvent_t e;
  check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  e_ = e;
#else
  unavailable();
#endif
}

Event::~Event() {
  may_release("cudaEventDestroy");
  if (e_) CORAL_CUDA_RELEASE(cudaEventDestroy(static_cast<cudaEvent_t>(e_)));
}

void Event::record(void* stream) {
  if (!e_) return;
  CORAL_CUDA(check(cudaEventRecord(static_cast<cudaEvent_t>(e_), static_cast<cudaStream_t>(stream)), "cudaEventRecord"));
  (void)stream;
}

void Event::sync() {
  if (!e_) return;
  CORAL_CUDA(check(cudaEventSynchronize(static_cast<cudaEvent_t>(e_)), "cudaEventSynchronize"));
}

HostFlag::HostFlag() {
  if (emu::enabled()) {
    host_ = new uint64_t(0);
    return;
  }
#if CORAL_HAVE_CUDA
  void* h = nullptr;
  check(cudaHostAlloc(&h, 64, cudaHostAllocMapped | cudaHostAllocPortable), "cudaHostAlloc (stream flag)");
  host_ = static_cast<volatile uint64_t*>(h);
  *host_ = 0;
  check(cudaHostGetDevicePointer(&dev_, h, 0), "cudaHostGetDevicePointer (stream flag)");
#else
  unavailable();
#endif
}

HostFlag::~HostFlag() {
  if (emu::enabled()) {
    delete const_cast<uint64_t*>(host_);
    return;
  }
  // A stream may still be polling the word: let the device finish before the memory goes.
  CORAL_CUDA_RELEASE((cudaDeviceSynchronize(), cudaFreeHost(const_cast<uint64_t*>(host_))));
}

void HostFlag::stream_wait_geq(void* stream, uint64_t value) {
  if (value > waited_.load(std::memory_order_relaxed)) waited_.store(value, std::memory_order_relaxed);
  if (emu::enabled()) return emu::stream_wait(stream, host_, value);
#if CORAL_HAVE_CUDA
  if (WaitValueFn f = wait_value_fn()) {
    CUresult r = f(static_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(dev_), value, CU_STREAM_WAIT_VALUE_GEQ);
    if (r == CUDA_SUCCESS) return;
  }
  check(kernels::cuda::wait_geq(static_cast<const volatile uint64_t*>(dev_), value, stream), "flag wait kernel");
#else
  (void)stream;
  (void)value;
#endif
}

bool HostFlag::parked() const {
  return waited_.load(std::memory_order_relaxed) > __atomic_load_n(host_, __ATOMIC_ACQUIRE);
}
void HostFlag::set(uint64_t value) { __atomic_store_n(const_cast<uint64_t*>(host_), value, __ATOMIC_RELEASE); }

void* alloc_device(size_t bytes) {
  may_allocate("cudaMalloc");
  if (emu::enabled()) return emu::alloc(bytes);
  void* p = nullptr;
  CORAL_CUDA(check(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc"));
  (void)bytes;
  return p;
}

void free_device(void* p) {
  if (!p) return;
  may_release("cudaFree");
  if (emu::enabled()) return emu::free(p);
  CORAL_CUDA_RELEASE(cudaFree(p));
}

void* alloc_pinned(size_t bytes) {
  may_allocate("cudaHostAlloc");
  if (emu::enabled()) return ::operator new(bytes ? bytes : 1);
  void* p = nullptr;
  CORAL_CUDA(check(cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable), "cudaHostAlloc"));
  (void)bytes;
  return p;
}

void free_pinned(void* p) {
  if (!p) return;
  may_release("cudaFreeHost");
  if (emu::enabled()) return ::operator delete(p);
  CORAL_CUDA_RELEASE(cudaFreeHost(p));
}

void copy_async(void* dst, const void* src, size_t bytes, void* stream) {
  if (!bytes) return;
  if (emu::enabled()) {
    emu::stream_sync(stream);  // stream order: after the calls queued before it
    std::memmove(dst, src, bytes);
    return;
  }
  CORAL_CUDA(check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, static_cast<cudaStream_t>(stream)),
                   "cudaMemcpyAsync"));
  (void)dst, (void)src, (void)stream;
}

IpcHandle ipc_export(void* dev) {
  if (emu::enabled()) return emu::ipc_export(dev);
  IpcHandle out{};
#if CORAL_HAVE_CUDA
  cudaIpcMemHandle_t h;
  check(cudaIpcGetMemHandle(&h, dev), "cudaIpcGetMemHandle");
  static_assert(sizeof h == sizeof out);
  std::memcpy(out.data(), &h, sizeof h);
#else
  unavailable();
#endif
  return out;
}

void* ipc_open(const IpcHandle& in) {
  may_allocate("cudaIpcOpenMemHandle");
  if (emu::enabled()) return emu::ipc_open(in);
  void* p = nullptr;
#if CORAL_HAVE_CUDA
  cudaIpcMemHandle_t h;
  std::memcpy(&h, in.data(), sizeof h);
  check(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle");
#else
  unavailable();
#endif
  return p;
}

void ipc_close(void* p) {
  if (!p) return;
  may_release("cudaIpcCloseMemHandle");
  if (emu::enabled()) return emu::ipc_close(p);
  CORAL_CUDA_RELEASE(cudaIpcCloseMemHandle(p));
}

}  // namespace coral::gpu
