#include "transport/shm/regions.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <map>
#include <mutex>

#include "base/error.h"
#include "base/log.h"

namespace coral::transport::shm {

namespace {

std::mutex g_mu;
std::map<const std::byte*, Region>& table() {
  static std::map<const std::byte*, Region> t;  // by base
  return t;
}
std::atomic<uint64_t> g_next_id{1};

// The region holding [p, p + bytes) (under g_mu).
Region* find_locked(const void* p, size_t bytes) {
  auto& t = table();
  auto* b = static_cast<const std::byte*>(p);
  auto it = t.upper_bound(b);
  if (it == t.begin()) return nullptr;
  --it;
  Region& r = it->second;
  if (b < r.base || static_cast<size_t>(b - r.base) > r.size || bytes > r.size - static_cast<size_t>(b - r.base))
    return nullptr;
  return &r;
}

}  // namespace

void* region_alloc(size_t size) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (size == 0) size = 1;
  if (size > SIZE_MAX - page) fail(coralInvalidArgument, fmt::format("size {} is too large", size));
  const size_t bytes = (size + page - 1) / page * page;
  int fd = memfd_create("coral-mem", MFD_CLOEXEC);
  if (fd < 0) fail_errno("memfd_create for coralMemAlloc", errno);
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int e = errno;
    close(fd);
    fail(coralSystemError, fmt::format("coralMemAlloc of {} bytes: ftruncate: {}", bytes, std::strerror(e)));
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    int e = errno;
    close(fd);
    fail(coralSystemError, fmt::format("coralMemAlloc of {} bytes: mmap: {}", bytes, std::strerror(e)));
  }
  std::lock_guard<std::mutex> lock(g_mu);
  table()[static_cast<std::byte*>(p)] = Region{g_next_id++, fd, static_cast<std::byte*>(p), bytes, 0};
  return p;
}

void region_free(void* p) {
  Region r;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = table().find(static_cast<std::byte*>(p));
    if (it == table().end())
      fail(coralInvalidArgument, fmt::format("ptr {} was not allocated by coralMemAlloc (or is not its start)", p));
    if (it->second.registered)
      fail(coralInvalidUsage, fmt::format("ptr {} is still registered with {} communicator(s): coralCommDeregister it "
                                          "first",
                                          p, it->second.registered));
    r = it->second;
    table().erase(it);
  }
  munmap(r.base, r.size);
  close(r.fd);
}

std::optional<Region> region_of(const void* p, size_t bytes) {
  std::lock_guard<std::mutex> lock(g_mu);
  Region* r = find_locked(p, bytes);
  return r ? std::optional<Region>(*r) : std::nullopt;
}

bool region_register(const void* p, size_t bytes) {
  std::lock_guard<std::mutex> lock(g_mu);
  Region* r = find_locked(p, bytes);
  if (r) ++r->registered;
  return r != nullptr;
}

void region_deregister(const void* p) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (Region* r = find_locked(p, 0); r && r->registered > 0) --r->registered;
}

std::optional<Region> registered_region(const void* p, size_t bytes) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (table().empty()) return std::nullopt;
  Region* r = find_locked(p, bytes);
  return r && r->registered ? std::optional<Region>(*r) : std::nullopt;
}

PeerRegions::~PeerRegions() {
  for (const Mapped& m : maps_) munmap(const_cast<std::byte*>(m.at), m.size);
}

const std::byte* PeerRegions::find(const RegionRef& r, uint64_t addr, size_t bytes) {
  if (addr < r.base || addr - r.base > r.size || bytes > r.size - (addr - r.base))
    fail(coralRemoteError, fmt::format("a by-reference message ({} bytes at {:#x}) lies outside the region it names "
                                       "({} bytes at {:#x})",
                                       bytes, addr, r.size, r.base));
  for (size_t i = 0; i < maps_.size(); ++i)
    if (maps_[i].id == r.id) {
      if (i) std::swap(maps_[i], maps_[0]);
      return maps_[0].at + (addr - r.base);
    }
  if (failed_) return nullptr;
  // The sender's memfd, opened through /proc as cross-memory attach already requires of us.
  const std::string path = fmt::format("/proc/{}/fd/{}", pid_, r.fd);
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  void* p = fd < 0 ? MAP_FAILED : mmap(nullptr, r.size, PROT_READ, MAP_SHARED, fd, 0);
  if (fd >= 0) close(fd);
  if (p == MAP_FAILED) {
    log::info(log::Net, "cannot map pid {}'s registered memory ({}): {}; reading it by cross-memory attach", pid_, path,
              std::strerror(errno));
    failed_ = true;
    return nullptr;
  }
  // Live regions of one process never overlap: one that overlaps the new one has been freed,
  // and its mapping would only keep its pages alive.
  for (size_t i = 0; i < maps_.size();) {
    const Mapped& m = maps_[i];
    if (m.base < r.base + r.size && r.base < m.base + m.size) {
      munmap(const_cast<std::byte*>(m.at), m.size);
      maps_.erase(maps_.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
  if (maps_.size() == kMaxMapped) {
    munmap(const_cast<std::byte*>(maps_.back().at), maps_.back().size);
    maps_.pop_back();
  }
  maps_.insert(maps_.begin(), Mapped{r.id, r.base, static_cast<const std::byte*>(p), r.size});
  return maps_[0].at + (addr - r.base);
}

}  // namespace coral::transport::shm
