#include "gpu/runtime.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "base/error.h"
#include "base/log.h"
#include "gpu/backend.h"
#include "gpu/emulate.h"

#if CORAL_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace coral::gpu {

namespace {

#if !CORAL_HAVE_CUDA
constexpr const char* kNoCuda = "this build of Coral has no CUDA support (built without nvcc)";

// Without CUDA every entry point that needs a GPU fails with a clear message; releases (called
// from destructors, never with anything to release) do nothing.
template <class R, class... Args>
[[noreturn]] R unavailable(Args...) {
  fail(coralUnhandledCudaError, kNoCuda);
}
template <class... Args>
void nothing(Args...) {}

constexpr Backend kNone{
    .usable = [] { return false; },
    .why_not = []() -> std::string { return kNoCuda; },
    .abort_on_parked_release = false,
    .device_of = [](const void*) { return -1; },
    .load_kernels = unavailable<void>,
    .current_device = unavailable<int>,
    .device_count = [] { return 0; },
    .set_device = unavailable<void, int>,
    .enable_peer_access = unavailable<void, int>,
    .stream_capturing = [](void*) { return false; },
    .relax_capture = nothing<>,
    .stream_create = unavailable<void*>,
    .stream_destroy = nothing<void*>,
    .stream_query = unavailable<bool, void*>,
    .event_create = unavailable<void*>,
    .event_destroy = nothing<void*>,
    .event_record = unavailable<void, void*, void*>,
    .event_query = unavailable<bool, void*>,
    .flag_alloc = unavailable<void, volatile uint64_t*&, void*&>,
    .flag_free = nothing<volatile uint64_t*>,
    .flag_wait = nothing<void*, const volatile uint64_t*, void*, uint64_t>,
    .alloc_device = unavailable<void*, size_t>,
    .free_device = nothing<void*>,
    .alloc_pinned = unavailable<void*, size_t>,
    .free_pinned = nothing<void*>,
    .copy_async = unavailable<void, void*, const void*, size_t, void*>,
    .ipc_export = unavailable<IpcHandle, void*>,
    .ipc_open = unavailable<void*, const IpcHandle&>,
    .ipc_close = nothing<void*>,
};
#endif

// CUDA where the build has it, even without a usable device (its calls then fail with CUDA's
// own error), else none.
const Backend& native_backend() {
#if CORAL_HAVE_CUDA
  return cuda_backend();
#else
  return kNone;
#endif
}

// Decided once, the first time anything needs it (as emu::enabled() is).
const Backend& backend() {
  static const Backend& chosen = emu::enabled() ? emulated_backend() : native_backend();
  return chosen;
}

thread_local const HostFlag* t_progress_flag = nullptr;

// Calls that take the driver's context lock for writing (allocate, free, create, destroy).
void may_allocate(const char* what) {
  if (t_progress_flag && t_progress_flag->parked())
    fail(coralInternalError, fmt::format("{} on the progress thread while a caller's stream waits for it "
                                         "(a deadlock in the CUDA driver): allocate before parking",
                                         what));
}
void may_release(const char* what) {
  if (!t_progress_flag || !t_progress_flag->parked()) return;
  const std::string msg = fmt::format(
      "{} on the progress thread while a caller's stream waits for it: this can deadlock in the CUDA driver", what);
  if (backend().abort_on_parked_release) {
    std::fprintf(stderr, "coral: %s\n", msg.c_str());
    std::abort();
  }
  log::warn(log::Coll, "{}", msg);
}
// Whether p is something to release (not null), after may_release's check.
bool releasing(const void* p, const char* what) {
  if (!p) return false;
  may_release(what);
  return true;
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

bool usable() { return backend().usable(); }
std::string why_not() { return backend().why_not(); }
int device_of(const void* p) { return p ? backend().device_of(p) : -1; }
void load_kernels() {
  may_allocate("loading the CUDA kernels");
  backend().load_kernels();
}
int current_device() { return backend().current_device(); }
void set_device(int device) { backend().set_device(device); }
void enable_peer_access(int peer_device) { backend().enable_peer_access(peer_device); }
bool stream_capturing(void* stream) { return backend().stream_capturing(stream); }
void relax_capture() {
  thread_local bool done = false;
  if (!done) backend().relax_capture();
  done = true;
}
int device_count() { return backend().device_count(); }

Stream::Stream() {
  may_allocate("cudaStreamCreate");
  s_ = backend().stream_create();
}
Stream::~Stream() {
  may_release("cudaStreamDestroy");
  backend().stream_destroy(s_);
}
namespace {
// Polled rather than cudaStreamSynchronize or cudaEventSynchronize, which would wait in silence
// for good where Coral's stream shares a hardware queue with a caller's stream held on Coral's
// flag (docs/gpu.md, "Stream order"): that is said after 10 s, and fails the call at the timeout.
template <class Done>
void wait_polled(Done done, const WaitLimit& limit) {
  const double timeout_s = limit.timeout_s;
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  bool told = false;
  while (!done()) {
    const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!told && waited > 10) {
      log::warn(log::Coll,
                "Coral's GPU stream has not finished its copies and kernels in 10 s. If a caller's stream "
                "held on Coral's flag shares its hardware queue, it never will: set "
                "CORAL_GPU_STREAM_WAIT=host (or raise CUDA_DEVICE_MAX_CONNECTIONS)");
      told = true;
    }
    if (timeout_s > 0 && waited > timeout_s)
      fail(coralTimeout,
           fmt::format("Coral's GPU stream did not finish its copies and kernels within the timeout ({:.0f} s); "
                       "a caller's stream held on Coral's flag may share its hardware queue: try "
                       "CORAL_GPU_STREAM_WAIT=host",
                       timeout_s));
    // Spin at first, as the CUDA syncs do; a long wait need not hold the core.
    if (waited < 1e-3) {
      std::this_thread::yield();
    } else {
      if (limit.check) (*limit.check)();
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
}
}  // namespace

void Stream::sync_raw(void* s, const WaitLimit& limit) {
  wait_polled([s] { return backend().stream_query(s); }, limit);
}

Event::Event() {
  may_allocate("cudaEventCreate");
  e_ = backend().event_create();
}
Event::~Event() {
  may_release("cudaEventDestroy");
  backend().event_destroy(e_);
}
void Event::record(void* stream) { backend().event_record(e_, stream); }
void Event::sync(const WaitLimit& limit) {
  wait_polled([this] { return backend().event_query(e_); }, limit);
}
bool Event::query() { return backend().event_query(e_); }

HostFlag::HostFlag() { backend().flag_alloc(host_, dev_); }
HostFlag::~HostFlag() {
  // Every call raises the flag when it ends, failed ones too; should a stream still wait (a call
  // that never ran), it must not hang the release, which waits for the device (flag_free).
  if (parked()) {
    log::warn(log::Coll, "a stream still waited for a stream-ordered call that never ended; released");
    set(~uint64_t{0});
  }
  backend().flag_free(host_);
}
void HostFlag::note_wait(uint64_t value) {
  for (uint64_t w = waited_.load(std::memory_order_relaxed); value > w;)
    if (waited_.compare_exchange_weak(w, value, std::memory_order_relaxed)) break;
}
void HostFlag::enqueue_wait(void* stream, uint64_t value) { backend().flag_wait(stream, host_, dev_, value); }
bool HostFlag::parked() const {
  return waited_.load(std::memory_order_relaxed) > __atomic_load_n(host_, __ATOMIC_ACQUIRE);
}
void HostFlag::set(uint64_t value) {
  // Never back: stream calls finish in order, and a later one's number covers the earlier ones.
  auto* word = const_cast<uint64_t*>(host_);
  uint64_t now = __atomic_load_n(word, __ATOMIC_ACQUIRE);
  while (now < value && !__atomic_compare_exchange_n(word, &now, value, true, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE)) {}
}

void* alloc_device(size_t bytes) {
  may_allocate("cudaMalloc");
  return backend().alloc_device(bytes);
}
void free_device(void* p) {
  if (releasing(p, "cudaFree")) backend().free_device(p);
}
void* alloc_pinned(size_t bytes) {
  may_allocate("cudaHostAlloc");
  return backend().alloc_pinned(bytes);
}
void free_pinned(void* p) {
  if (releasing(p, "cudaFreeHost")) backend().free_pinned(p);
}
void copy_async(void* dst, const void* src, size_t bytes, void* stream) {
  if (bytes) backend().copy_async(dst, src, bytes, stream);
}

IpcHandle ipc_export(void* dev) { return backend().ipc_export(dev); }
void* ipc_open(const IpcHandle& h) {
  may_allocate("cudaIpcOpenMemHandle");
  return backend().ipc_open(h);
}
void ipc_close(void* p) {
  if (releasing(p, "cudaIpcCloseMemHandle")) backend().ipc_close(p);
}

}  // namespace coral::gpu
