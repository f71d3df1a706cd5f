// Slot rings of a TCP link: where incoming messages land (the executor reduces straight out of
// them) and where outgoing messages wait until the kernel took them. Allocated on first use: a
// full mesh of links exists, but an algorithm talks to few peers.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace coral::transport::tcp {

struct InSlot {
  uint64_t seq = 0;
  uint64_t tag = 0;
  uint32_t total = 0;
  uint16_t nparts = 0;    // 0: nothing received for this slot yet
  uint16_t received = 0;  // parts fully received
};

class SlotRing {
 public:
  SlotRing(size_t slot_bytes, uint32_t nslots) : slot_bytes_(slot_bytes), nslots_(nslots) {}
  std::byte* at(uint64_t seq) {
    if (!mem_) mem_.reset(new std::byte[slot_bytes_ * nslots_]);
    return mem_.get() + (seq % nslots_) * slot_bytes_;
  }
  uint32_t nslots() const { return nslots_; }
  size_t slot_bytes() const { return slot_bytes_; }

 private:
  size_t slot_bytes_;
  uint32_t nslots_;
  std::unique_ptr<std::byte[]> mem_;
};

}  // namespace coral::transport::tcp
