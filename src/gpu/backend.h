// What the GPU runtime (gpu/runtime.h) does, as one table per backend: the real CUDA runtime
// (a build with CUDA), the emulated stand-in GPU (CORAL_GPU_EMULATE=1, gpu/emulate.h) and none
// (a build without CUDA: whatever needs a GPU fails, releases do nothing). runtime.cc picks one
// the first time it is needed; its public functions do what all backends share (the
// progress-thread checks, null pointers and empty copies) and forward the rest here.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "gpu/runtime.h"

namespace coral::gpu {

struct Backend {
  bool (*usable)();
  std::string (*why_not)();
  // A release on the progress thread while a stream waits for it aborts (the emulated GPU
  // runs in tests: the mistake must be loud) instead of being logged.
  bool abort_on_parked_release;
  int (*device_of)(const void* p);  // p is not null
  void (*load_kernels)();
  int (*current_device)();
  int (*device_count)();
  void (*set_device)(int device);
  // Ranks that are threads of one process on different GPUs use each other's memory directly.
  void (*enable_peer_access)(int peer_device);
  bool (*stream_capturing)(void* s);  // s is being captured into a CUDA graph
  // Lets this thread's syncs run while another thread captures in the global mode.
  void (*relax_capture)();
  void* (*stream_create)();
  void (*stream_destroy)(void* s);
  bool (*stream_query)(void* s);  // the work queued on s is done (cudaStreamQuery)
  void* (*event_create)();
  void (*event_destroy)(void* e);
  void (*event_record)(void* e, void* stream);
  bool (*event_query)(void* e);  // the work before its record is done (cudaEventQuery)
  // A HostFlag's 64-bit word: host_ and the device's view of it, dev_.
  void (*flag_alloc)(volatile uint64_t*& host, void*& dev);
  void (*flag_free)(volatile uint64_t* host);
  void (*flag_wait)(void* stream, const volatile uint64_t* host, void* dev, uint64_t value);
  void* (*alloc_device)(size_t bytes);
  void (*free_device)(void* p);  // the releases get no null pointers
  void* (*alloc_pinned)(size_t bytes);
  void (*free_pinned)(void* p);
  void (*copy_async)(void* dst, const void* src, size_t bytes, void* stream);  // bytes > 0
  IpcHandle (*ipc_export)(void* dev);
  void* (*ipc_open)(const IpcHandle& h);
  void (*ipc_close)(void* p);
};

#if CORAL_HAVE_CUDA
const Backend& cuda_backend();  // cuda_backend.cc
#endif
const Backend& emulated_backend();  // emulate.cc
// none: runtime.cc

}  // namespace coral::gpu
