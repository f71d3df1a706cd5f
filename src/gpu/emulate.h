// Stand-in GPUs for machines without one (CORAL_GPU_EMULATE=N, a test hook): "device memory"
// is named shared memory (so cuda_ipc's handle exchange works across processes), copies are
// memcpy, kernels are the CPU kernels, and a stream is a list of flag waits that a synchronise
// drains. Everything the GPU path does on the host side (call classification, stream-ordered
// queueing, cuda_ipc links with device slots, the device executor, staging) then runs here.
#pragma once
#include <cstddef>
#include <cstdint>

#include "gpu/runtime.h"

namespace coral::gpu::emu {

bool enabled();
int count();  // CORAL_GPU_EMULATE: how many stand-in GPUs
// The thread's current stand-in GPU, as cudaGetDevice/cudaSetDevice (which refuses a bad one).
int current_device();
void set_device(int device);
int device_of(const void* p);
void* alloc(size_t bytes);
void free(void* p);
void* stream_create();
void stream_destroy(void* s);
// Records that work after this point on s waits for *flag >= value.
void stream_wait(void* s, const volatile uint64_t* flag, uint64_t value);
// Waits until every recorded flag wait of s holds (nullptr: the default stream).
void stream_sync(void* s);
bool stream_query(void* s);
// The flag word streams wait on; waits on a freed one hold.
void flag_alloc(volatile uint64_t*& host, void*& dev);
void flag_free(volatile uint64_t* host);
// Events keep the GPU they were made on; recording one on another GPU's stream fails.
void* event_create();
void event_destroy(void* e);
void event_record(void* e, void* stream);
bool event_query(void* e);
IpcHandle ipc_export(void* p);
void* ipc_open(const IpcHandle& h);
void ipc_close(void* p);

}  // namespace coral::gpu::emu
