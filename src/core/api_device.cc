// The device-buffer utilities of coral_device.h: gpu/runtime.h behind the C API's one guard.
#include <coral/coral_device.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/error.h"
#include "core/guard.h"
#include "gpu/emulate.h"
#include "gpu/runtime.h"

namespace {

using coral::fail;
using coral::capi::guard;

// Calls that need a GPU fail without one, with the reason (no driver, no device, no CUDA build).
void need_gpu() {
  if (!coral::gpu::usable()) fail(coralUnhandledCudaError, "no usable GPU (" + coral::gpu::why_not() + ")");
}

// The streams coralStreamCreate made, by handle. Never freed: a stream still here at exit must
// not be destroyed after the CUDA runtime has gone.
struct Streams {
  std::mutex mu;
  std::map<void*, std::unique_ptr<coral::gpu::Stream>> by_handle;
};
Streams& streams() {
  static Streams* s = new Streams;
  return *s;
}

bool made_here(void* stream) {
  Streams& s = streams();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.by_handle.count(stream) != 0;
}

// A stream to wait on or copy on: NULL, one of ours, or on a real GPU any cudaStream_t (the
// stand-in GPU's streams are Coral's objects, so there it must be one of ours).
void check_stream(void* stream) {
  if (stream && coral::gpu::emu::enabled() && !made_here(stream))
    fail(coralInvalidArgument, "stream was not made by coralStreamCreate (the stand-in GPU has no other streams)");
}

}  // namespace

extern "C" {

coralResult_t coralDeviceCount(int* count) {
  return guard(nullptr, "coralDeviceCount", [&] {
    if (!count) fail(coralInvalidArgument, "count is NULL");
    *count = coral::gpu::device_count();
  });
}

coralResult_t coralDeviceAvailable(int* available, char* why, size_t size) {
  return guard(nullptr, "coralDeviceAvailable", [&] {
    if (!available) fail(coralInvalidArgument, "available is NULL");
    const bool ok = coral::gpu::usable();
    *available = ok ? 1 : 0;
    if (!why) return;
    const std::string reason = ok ? "" : coral::gpu::why_not();
    if (reason.size() + 1 > size)
      fail(coralInvalidArgument, "size " + std::to_string(size) + " is too small for why (" +
                                     std::to_string(reason.size() + 1) + " bytes with its NUL)");
    std::memcpy(why, reason.c_str(), reason.size() + 1);
  });
}

coralResult_t coralDeviceSet(int device) {
  return guard(nullptr, "coralDeviceSet", [&] {
    need_gpu();
    const int n = coral::gpu::device_count();
    if (device < 0 || device >= n)
      fail(coralInvalidArgument,
           "device " + std::to_string(device) + " is out of range [0, " + std::to_string(n) + ")");
    coral::gpu::set_device(device);
  });
}

coralResult_t coralDeviceGet(int* device) {
  return guard(nullptr, "coralDeviceGet", [&] {
    if (!device) fail(coralInvalidArgument, "device is NULL");
    need_gpu();
    *device = coral::gpu::current_device();
  });
}

coralResult_t coralDeviceMalloc(void** ptr, size_t size) {
  return guard(nullptr, "coralDeviceMalloc", [&] {
    if (!ptr) fail(coralInvalidArgument, "ptr is NULL");
    *ptr = nullptr;
    need_gpu();
    *ptr = coral::gpu::alloc_device(size);
  });
}

coralResult_t coralDeviceFree(void* ptr) {
  return guard(nullptr, "coralDeviceFree", [&] {
    if (!ptr) return;
    if (coral::gpu::device_of(ptr) < 0)
      fail(coralInvalidArgument, "ptr is not device memory (free it where it was allocated)");
    coral::gpu::free_device(ptr);
  });
}

coralResult_t coralStreamCreate(void** stream) {
  return guard(nullptr, "coralStreamCreate", [&] {
    if (!stream) fail(coralInvalidArgument, "stream is NULL");
    *stream = nullptr;
    need_gpu();
    auto s = std::make_unique<coral::gpu::Stream>();
    void* handle = s->get();
    Streams& all = streams();
    std::lock_guard<std::mutex> lock(all.mu);
    all.by_handle[handle] = std::move(s);
    *stream = handle;
  });
}

coralResult_t coralStreamDestroy(void* stream) {
  return guard(nullptr, "coralStreamDestroy", [&] {
    if (!stream) fail(coralInvalidArgument, "stream is NULL");
    std::unique_ptr<coral::gpu::Stream> s;
    {
      Streams& all = streams();
      std::lock_guard<std::mutex> lock(all.mu);
      auto it = all.by_handle.find(stream);
      if (it == all.by_handle.end())
        fail(coralInvalidArgument, "stream was not made by coralStreamCreate (or is already destroyed)");
      s = std::move(it->second);
      all.by_handle.erase(it);
    }
    s.reset();
  });
}

coralResult_t coralStreamSynchronize(void* stream) {
  return guard(nullptr, "coralStreamSynchronize", [&] {
    need_gpu();
    check_stream(stream);
    coral::gpu::Stream::sync_raw(stream);
  });
}

coralResult_t coralMemcpyAsync(void* dst, const void* src, size_t bytes, void* stream) {
  return guard(nullptr, "coralMemcpyAsync", [&] {
    if (!dst && bytes) fail(coralInvalidArgument, "dst is NULL with bytes > 0");
    if (!src && bytes) fail(coralInvalidArgument, "src is NULL with bytes > 0");
    need_gpu();
    check_stream(stream);
    coral::gpu::copy_async(dst, src, bytes, stream);
  });
}

}  // extern "C"
