#include "gpu/emulate.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/config.h"
#include "base/error.h"
#include "gpu/backend.h"

namespace coral::gpu::emu {

namespace {

struct Mapping {
  size_t bytes;
  std::string name;  // empty for mappings opened from a peer's handle
  int device;        // the stand-in GPU current when it was allocated or opened
};

thread_local int t_device = 0;  // as CUDA's: each thread starts on GPU 0

using Waits = std::vector<std::pair<const volatile uint64_t*, uint64_t>>;

struct EmuStream {
  Waits waits;     // flag waits not yet seen to hold
  int device = 0;  // the stand-in GPU current at its creation, as a CUDA stream's
};

// Recorded, an event holds the flag waits its stream had queued: it fires once they hold, as a
// real event fires once the stream reaches it. It belongs to a GPU: recording it on another
// GPU's stream fails, as CUDA's does, so the emulator catches work sent to the wrong GPU.
struct EmuEvent {
  int device;
  Waits waits;
};

std::mutex mu;  // guards everything here, the waits included

// Flags not yet freed: a wait on a freed one (its communicator is gone, its calls all done)
// holds, and its word is never read again. Freed words are kept to the end, so that no new
// flag takes an address old waits still name.
// Never destroyed: a flag may be freed during the exit's own destructors.
std::set<const volatile uint64_t*>& live_flags() {
  static auto* s = new std::set<const volatile uint64_t*>;
  return *s;
}
std::vector<uint64_t*>& graveyard() {
  static auto* g = new std::vector<uint64_t*>;
  return *g;
}

bool holds(const std::pair<const volatile uint64_t*, uint64_t>& w) {  // under mu
  return !live_flags().count(w.first) ||
         __atomic_load_n(const_cast<const uint64_t*>(w.first), __ATOMIC_ACQUIRE) >= w.second;
}
bool holds(const Waits& waits) {  // under mu
  return std::all_of(waits.begin(), waits.end(), [](const auto& w) { return holds(w); });
}
// Drops the waits that hold (flags only rise), so a stream's list stays short.
void prune(Waits& waits) {  // under mu
  waits.erase(std::remove_if(waits.begin(), waits.end(), [](const auto& w) { return holds(w); }), waits.end());
}
// Named segments outlive the process unless unlinked; those a program never freed are unlinked
// at exit (the mappings themselves go with the process).
struct Registry {
  std::map<uintptr_t, Mapping> m;
  ~Registry() {
    for (auto& [addr, map] : m)
      if (!map.name.empty()) shm_unlink(map.name.c_str());
  }
};
std::map<uintptr_t, Mapping>& maps() {
  static Registry r;
  return r.m;
}
EmuStream& default_stream() {
  static EmuStream s;
  return s;
}

int open_shared(const std::string& name, bool create) {
  return shm_open(name.c_str(), create ? O_CREAT | O_EXCL | O_RDWR : O_RDWR, 0600);
}

void* map_fd(int fd, const std::string& name, size_t bytes, bool create) {
  if (fd < 0) fail_errno("emulated GPU memory: shm_open " + name, errno);
  if (create && ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int e = errno;
    close(fd);
    fail_errno("emulated GPU memory: ftruncate", e);
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) fail_errno("emulated GPU memory: mmap", errno);
  return p;
}

}  // namespace

int count() {
  static const int n = static_cast<int>(config::get_int("CORAL_GPU_EMULATE"));
  return n;
}

bool enabled() { return count() > 0; }

int current_device() { return t_device; }

void set_device(int device) {
  if (device < 0 || device >= count())
    fail(coralUnhandledCudaError, "emulated cudaSetDevice(" + std::to_string(device) + "): invalid device ordinal (" +
                                      std::to_string(count()) + " stand-in GPUs)");
  t_device = device;
}

int device_of(const void* p) {
  std::lock_guard<std::mutex> lock(mu);
  auto a = reinterpret_cast<uintptr_t>(p);
  auto it = maps().upper_bound(a);
  if (it == maps().begin()) return -1;
  --it;
  return a < it->first + it->second.bytes ? it->second.device : -1;
}

void* alloc(size_t bytes) {
  static std::atomic<unsigned> counter{0};
  bytes = bytes ? bytes : 1;
  // A rank killed with SIGKILL leaves its segments behind, and a later process can get its pid:
  // a name taken by such a leftover is skipped, not reported.
  std::string name;
  int fd = -1;
  for (int tries = 0; tries < 1000; ++tries) {
    name = "/coral-emu-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
    fd = open_shared(name, true);
    if (fd >= 0 || errno != EEXIST) break;
  }
  void* p = map_fd(fd, name, bytes, true);
  std::lock_guard<std::mutex> lock(mu);
  maps()[reinterpret_cast<uintptr_t>(p)] = {bytes, name, t_device};
  return p;
}

void free(void* p) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mu);
  auto it = maps().find(reinterpret_cast<uintptr_t>(p));
  if (it == maps().end()) return;
  munmap(p, it->second.bytes);
  if (!it->second.name.empty()) shm_unlink(it->second.name.c_str());
  maps().erase(it);
}

// A stream handle as the calls take it: NULL is the default stream.
EmuStream& stream_of(void* s) { return s ? *static_cast<EmuStream*>(s) : default_stream(); }

void* stream_create() {
  auto* s = new EmuStream;
  s->device = t_device;
  return s;
}
void stream_destroy(void* s) { delete static_cast<EmuStream*>(s); }

void stream_wait(void* s, const volatile uint64_t* flag, uint64_t value) {
  EmuStream& st = stream_of(s);
  std::lock_guard<std::mutex> lock(mu);
  prune(st.waits);
  st.waits.emplace_back(flag, value);
}

bool stream_query(void* s) {
  EmuStream& st = stream_of(s);
  std::lock_guard<std::mutex> lock(mu);
  if (!holds(st.waits)) return false;
  prune(st.waits);
  return true;
}

void stream_sync(void* s) {
  EmuStream& st = stream_of(s);
  // The waits queued before the call; they stay on the stream (for events recorded meanwhile)
  // until they hold.
  Waits before;
  {
    std::lock_guard<std::mutex> lock(mu);
    before = st.waits;
  }
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (holds(before)) {
        prune(st.waits);
        return;
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void flag_alloc(volatile uint64_t*& host, void*&) {
  host = new uint64_t(0);
  std::lock_guard<std::mutex> lock(mu);
  live_flags().insert(host);
}

void flag_free(volatile uint64_t* host) {
  std::lock_guard<std::mutex> lock(mu);
  live_flags().erase(host);
  graveyard().push_back(const_cast<uint64_t*>(host));
}

IpcHandle ipc_export(void* p) {
  std::lock_guard<std::mutex> lock(mu);
  auto it = maps().find(reinterpret_cast<uintptr_t>(p));
  if (it == maps().end() || it->second.name.size() > 48)
    fail(coralUnhandledCudaError, "emulated cudaIpcGetMemHandle: not the base of an allocation");
  IpcHandle h{};
  uint64_t bytes = it->second.bytes;
  std::memcpy(h.data(), &bytes, 8);
  std::memcpy(h.data() + 8, it->second.name.data(), it->second.name.size());
  return h;
}

void* ipc_open(const IpcHandle& h) {
  uint64_t bytes;
  std::memcpy(&bytes, h.data(), 8);
  std::string name(reinterpret_cast<const char*>(h.data()) + 8,
                   strnlen(reinterpret_cast<const char*>(h.data()) + 8, 56));
  void* p = map_fd(open_shared(name, false), name, bytes, false);
  std::lock_guard<std::mutex> lock(mu);
  maps()[reinterpret_cast<uintptr_t>(p)] = {bytes, "", t_device};
  return p;
}

void ipc_close(void* p) { free(p); }

void* event_create() { return new EmuEvent{t_device, {}}; }
void event_destroy(void* e) { delete static_cast<EmuEvent*>(e); }

void event_record(void* e, void* stream) {
  const int ev = static_cast<EmuEvent*>(e)->device;
  const int st = stream ? static_cast<EmuStream*>(stream)->device : t_device;  // NULL: the current GPU's
  if (ev != st)
    fail(coralUnhandledCudaError, "emulated cudaEventRecord: the event is of GPU " + std::to_string(ev) +
                                      " and the stream of GPU " + std::to_string(st) + " (invalid resource handle)");
  EmuStream& s = stream_of(stream);
  std::lock_guard<std::mutex> lock(mu);
  prune(s.waits);
  static_cast<EmuEvent*>(e)->waits = s.waits;
}

bool event_query(void* e) {
  std::lock_guard<std::mutex> lock(mu);
  return holds(static_cast<EmuEvent*>(e)->waits);
}

}  // namespace coral::gpu::emu

namespace coral::gpu {

namespace {

// Emulated work completes when issued, but for the flag waits that events and synchronises
// honour; pinned memory is plain host memory.
constexpr Backend kEmulated{
    .usable = [] { return true; },
    .why_not = []() -> std::string { return ""; },
    .abort_on_parked_release = true,
    .device_of = emu::device_of,
    .load_kernels = [] {},
    .current_device = emu::current_device,
    .device_count = emu::count,
    .set_device = emu::set_device,
    .enable_peer_access = [](int) {},
    .stream_capturing = [](void*) { return false; },
    .relax_capture = [] {},
    .stream_create = emu::stream_create,
    .stream_destroy = emu::stream_destroy,
    .stream_query = emu::stream_query,
    .event_create = emu::event_create,
    .event_destroy = emu::event_destroy,
    .event_record = emu::event_record,
    .event_query = emu::event_query,
    .flag_alloc = emu::flag_alloc,
    .flag_free = emu::flag_free,
    .flag_wait = [](void* s, const volatile uint64_t* host, void*,
                    uint64_t value) { emu::stream_wait(s, host, value); },
    .alloc_device = emu::alloc,
    .free_device = emu::free,
    .alloc_pinned = [](size_t bytes) { return ::operator new(bytes ? bytes : 1); },
    .free_pinned = [](void* p) { ::operator delete(p); },
    .copy_async =
        [](void* dst, const void* src, size_t bytes, void* stream) {
          emu::stream_sync(stream);  // stream order: after the calls queued before it
          std::memmove(dst, src, bytes);
        },
    .ipc_export = emu::ipc_export,
    .ipc_open = emu::ipc_open,
    .ipc_close = emu::ipc_close,
};

}  // namespace

const Backend& emulated_backend() { return kEmulated; }

}  // namespace coral::gpu
