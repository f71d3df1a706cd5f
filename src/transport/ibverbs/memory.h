// A cache of memory registrations. Registering memory with the NIC pins pages and costs tens of
// microseconds, so a buffer used again (every step of a training loop) must not be registered
// again. Entries cover whole pages; a lookup inside a registered range is a hit; least recently
// used entries are released once the pinned total passes the capacity (never one in use).
// The registrar is abstract so the cache is tested without a device.
#pragma once
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>

namespace coral::transport::ibverbs {

struct Registration {
  uintptr_t addr = 0;
  size_t len = 0;
  uint32_t lkey = 0, rkey = 0;
  void* handle = nullptr;  // struct ibv_mr*
};

class Registrar {
 public:
  virtual ~Registrar() = default;
  virtual Registration reg(uintptr_t addr, size_t len) = 0;  // throws on failure
  virtual void dereg(const Registration& r) = 0;
};

class RegCache {
 public:
  RegCache(Registrar& r, size_t capacity_bytes, size_t page = 4096) : reg_(r), capacity_(capacity_bytes), page_(page) {}
  ~RegCache();
  // A registration covering [addr, addr + len), pinned until release().
  const Registration& acquire(const void* addr, size_t len);
  void release(const Registration& r);
  // The memory is going away (freed by its owner): drop every entry overlapping it.
  void invalidate(const void* addr, size_t len);

  size_t hits() const { return hits_; }
  size_t misses() const { return misses_; }
  size_t evictions() const { return evictions_; }
  size_t pinned_bytes() const { return pinned_; }
  size_t entries() const { return by_addr_.size(); }

 private:
  struct Entry {
    Registration r;
    int users = 0;
    std::list<std::multimap<uintptr_t, Entry>::iterator>::iterator lru;
  };
  void evict_to_fit();
  using Map = std::multimap<uintptr_t, Entry>;
  void drop(Map::iterator it);

  Registrar& reg_;
  size_t capacity_, page_;
  // Keyed by start. Unused entries never overlap (a miss absorbs them); one in use may be
  // overlapped by a newer, larger one.
  Map by_addr_;
  std::list<Map::iterator> lru_;  // front: most recently used
  size_t pinned_ = 0, hits_ = 0, misses_ = 0, evictions_ = 0;
};

}  // namespace coral::transport::ibverbs
