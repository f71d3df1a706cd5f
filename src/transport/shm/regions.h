// Registered host memory (coralMemAlloc + coralCommRegister): memfd-backed regions that local
// peers map, so that a by-reference message from one is read where it lies, in one pass, rather
// than copied into a slot first. The table is per process; a region's id is never reused, so a
// peer's cached mapping can never stand for another region.
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace coral::transport::shm {

struct Region {
  uint64_t id = 0;  // 0: none
  int fd = -1;
  std::byte* base = nullptr;
  size_t size = 0;
  int registered = 0;  // registrations with communicators
};

// size bytes (rounded up to a page) of memfd-backed memory; throws coral::Error.
void* region_alloc(size_t size);
// Frees a region_alloc() block. Throws coralInvalidArgument when p is not one, coralInvalidUsage
// while it is still registered.
void region_free(void* p);
// The region that holds [p, p + bytes), if any.
std::optional<Region> region_of(const void* p, size_t bytes);
// Counts a registration of the region holding [p, p + bytes); false when there is none.
bool region_register(const void* p, size_t bytes);
void region_deregister(const void* p);
// Whether [p, p + bytes) lies in a region that some communicator registered: only those travel
// by mapping (registration is the user's promise to keep the buffer for zero-copy use).
std::optional<Region> registered_region(const void* p, size_t bytes);

// What a by-reference message carries besides its address when its source lies in a registered
// region: enough for the receiver to map the region once and find the message in it.
struct RegionRef {
  uint64_t id;
  uint64_t base;  // the region's address in the sender
  uint64_t size;
  int32_t fd;  // the sender's descriptor of its memfd
};

// A receiver's mappings of one peer's regions, most recent first; a few at a time.
class PeerRegions {
 public:
  explicit PeerRegions(pid_t peer_pid) : pid_(peer_pid) {}
  ~PeerRegions();
  PeerRegions(const PeerRegions&) = delete;
  PeerRegions& operator=(const PeerRegions&) = delete;
  // [addr, addr + bytes) of the peer as mapped here; nullptr when the region cannot be mapped
  // (then the caller reads it with cross-memory attach). Throws coralRemoteError when the
  // message lies outside the region it names.
  const std::byte* find(const RegionRef& r, uint64_t addr, size_t bytes);

 private:
  struct Mapped {
    uint64_t id;
    uint64_t base;  // in the peer
    const std::byte* at;
    size_t size;
  };
  static constexpr size_t kMaxMapped = 8;
  pid_t pid_;
  std::vector<Mapped> maps_;
  bool failed_ = false;  // one failed open: this peer's regions are not mappable (no retries)
};

}  // namespace coral::transport::shm
