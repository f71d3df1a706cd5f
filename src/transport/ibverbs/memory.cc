#include "transport/ibverbs/memory.h"

#include <vector>

#include "base/error.h"

namespace coral::transport::ibverbs {

RegCache::~RegCache() {
  while (!by_addr_.empty()) drop(by_addr_.begin());
}

const Registration& RegCache::acquire(const void* p, size_t len) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const uintptr_t end = a + (len ? len : 1);
  // Entries starting at or before a, nearest first; a few steps back suffice.
  auto it = by_addr_.upper_bound(a);
  for (int back = 0; back < 8 && it != by_addr_.begin(); ++back) {
    --it;
    if (it->second.r.addr + it->second.r.len >= end) {
      ++hits_;
      ++it->second.users;
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      return it->second.r;
    }
  }
  ++misses_;
  uintptr_t lo = a & ~(page_ - 1), hi = (end + page_ - 1) & ~(page_ - 1);
  // Absorb overlapping unused entries, so a growing buffer ends up with one registration.
  for (auto o = by_addr_.begin(); o != by_addr_.end();) {
    uintptr_t oa = o->second.r.addr, oe = oa + o->second.r.len;
    auto next = std::next(o);
    if (oe > lo && oa < hi && o->second.users == 0) {
      lo = std::min(lo, oa);
      hi = std::max(hi, oe);
      drop(o);
    }
    o = next;
  }
  Registration r = reg_.reg(lo, hi - lo);
  auto pos = by_addr_.emplace(lo, Entry{r, 1, {}});
  lru_.push_front(pos);
  pos->second.lru = lru_.begin();
  pinned_ += r.len;
  evict_to_fit();
  return pos->second.r;
}

void RegCache::release(const Registration& r) {
  auto [b, e] = by_addr_.equal_range(r.addr);
  for (auto it = b; it != e; ++it)
    if (it->second.r.handle == r.handle && it->second.users > 0) {
      --it->second.users;
      break;
    }
  evict_to_fit();
}

void RegCache::invalidate(const void* p, size_t len) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p), end = a + len;
  for (auto it = by_addr_.begin(); it != by_addr_.end();) {
    auto next = std::next(it);
    uintptr_t oa = it->second.r.addr, oe = oa + it->second.r.len;
    if (oa < end && a < oe) {
      if (it->second.users > 0) fail(coralInvalidUsage, "ibverbs: memory freed while an operation uses it");
      drop(it);
    }
    it = next;
  }
}

void RegCache::evict_to_fit() {
  std::vector<Map::iterator> oldest_first(lru_.rbegin(), lru_.rend());
  for (Map::iterator it : oldest_first) {
    if (pinned_ <= capacity_) break;
    if (it->second.users > 0) continue;
    drop(it);
    ++evictions_;
  }
}

void RegCache::drop(Map::iterator it) {
  reg_.dereg(it->second.r);
  pinned_ -= it->second.r.len;
  lru_.erase(it->second.lru);
  by_addr_.erase(it);
}

}  // namespace coral::transport::ibverbs
