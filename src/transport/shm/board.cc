#include "transport/shm/board.h"

#include "transport/shm/connection.h"

namespace coral::transport::shm {

ShmBoard::ShmBoard(std::byte* base, size_t slot_bytes, uint32_t slots, size_t inline_max)
    : base_(base), slot_bytes_(slot_bytes), slots_(slots), inline_max_(inline_max), uses_(slots) {}

// Slots are taken round-robin; the next one is free once every reference to it was released.
// Never waits: a board slot is a resource the verified schedules know nothing about, so the
// caller sends the usual way rather than block on one.
std::byte* ShmBoard::acquire(size_t bytes) {
  if (bytes <= inline_max_ || bytes > slot_bytes_ || slots_ == 0) return nullptr;
  const uint32_t k = next_ % slots_;
  for (const Use& u : uses_[k])
    if (!u.link->released(u.seq)) return nullptr;
  uses_[k].clear();
  ++next_;
  return base_ + static_cast<size_t>(k) * slot_bytes_;
}

void ShmBoard::note(const std::byte* buf, ShmLink* link, uint32_t seq) {
  uses_[static_cast<size_t>(buf - base_) / slot_bytes_].push_back(Use{link, seq});
}

}  // namespace coral::transport::shm
