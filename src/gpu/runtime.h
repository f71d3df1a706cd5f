// The CUDA runtime as the rest of Coral sees it. Every failure becomes coral::Error with
// coralUnhandledCudaError, naming the call and CUDA's own error. A build without CUDA compiles
// the same header: nothing is usable and every pointer is host memory. cudaStream_t travels as
// void* so callers need no CUDA headers.
#pragma once
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace coral::gpu {

bool built();
// A driver and at least one device answer (asked once).
bool usable();
// Why not, when !usable().
std::string why_not();

// -1 for host memory (pageable, pinned or unknown to CUDA); else the device that owns p
// (device or managed memory).
int device_of(const void* p);
// Loads every Coral kernel on the current device now. Called before a caller's stream is first
// parked on a HostFlag: a lazy load after that can wait for the parked stream forever.
void load_kernels();
int current_device();
int device_count();
void set_device(int device);
// Maps peer_device's memory into the current device's address space (already done is fine).
void enable_peer_access(int peer_device);
// The stream is being captured into a CUDA graph (false without a real GPU).
bool stream_capturing(void* stream);
// Once per thread: this thread's CUDA calls stay legal while another thread captures a graph
// in the global mode (cudaStreamCaptureModeRelaxed), as NCCL's own threads do.
void relax_capture();

// How long a wait for the GPU's work may go on: until timeout_s (0: no limit; then the wait fails
// with coralTimeout), and while check (if given) does not throw, as it does once the call is
// given up (coralCommRevoke or coralCommAbort on another thread).
struct WaitLimit {
  double timeout_s = 0;
  const std::function<void()>* check = nullptr;
};

class Stream {
 public:
  Stream();  // non-blocking: never serialised behind the legacy default stream
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  void* get() const { return s_; }
  // Waits for the work queued on the stream, within limit.
  void sync(const WaitLimit& limit = {}) { sync_raw(s_, limit); }
  static void sync_raw(void* stream, const WaitLimit& limit = {});

 private:
  void* s_ = nullptr;
};

class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(void* stream);
  // Waits for the work before the record, within limit.
  void sync(const WaitLimit& limit = {});
  bool query();  // without waiting: has the work before the record finished?

 private:
  void* e_ = nullptr;
};

// A 64-bit word in pinned, device-mapped host memory that streams wait on. This is how a call
// stays stream-ordered while the host runs it: the caller's stream waits for the word to reach
// the call's number, and the host writes that number when the call is done.
class HostFlag {
 public:
  HostFlag();
  ~HostFlag();
  HostFlag(const HostFlag&) = delete;
  HostFlag& operator=(const HostFlag&) = delete;
  // Records that a stream is about to wait for value (for parked()); then enqueue_wait makes
  // it wait. Split so the record can be made under a lock the enqueue must not hold.
  void note_wait(uint64_t value);
  void enqueue_wait(void* stream, uint64_t value);
  void set(uint64_t value);  // raises the word to value (never lowers it)
  // A stream waits for a value not yet set.
  bool parked() const;

 private:
  volatile uint64_t* host_ = nullptr;
  void* dev_ = nullptr;
  std::atomic<uint64_t> waited_{0};
};

// The progress thread marks itself with the flag callers' streams wait on (core/gpu_state.h
// says why). While a stream is parked on it, that thread's allocations and creations fail with
// coralInternalError, and its frees and destructions abort under the emulated GPU (tests) or
// are logged on a real one, instead of deadlocking in the driver.
class ProgressScope {
 public:
  explicit ProgressScope(const HostFlag* flag);
  ~ProgressScope();
  ProgressScope(const ProgressScope&) = delete;
  ProgressScope& operator=(const ProgressScope&) = delete;

 private:
  const HostFlag* prev_;
};

void* alloc_device(size_t bytes);
void free_device(void* p);
void* alloc_pinned(size_t bytes);
void free_pinned(void* p);
// Any direction (unified addressing); asynchronous on stream.
void copy_async(void* dst, const void* src, size_t bytes, void* stream);

// Inter-process handles to device memory (cudaIpcGetMemHandle), as bytes for the store.
using IpcHandle = std::array<unsigned char, 64>;
IpcHandle ipc_export(void* dev);
void* ipc_open(const IpcHandle& h);
void ipc_close(void* p);

// Throws coralUnhandledCudaError for a non-zero cudaError_t.
void check(int err, const char* what);

}  // namespace coral::gpu
