// A sender's board: buffers in its own segment that every local peer has mapped. When one rank
// sends the same vector to several peers (the one-shot all-reduce sends it to all P-1), it writes
// it once here and each link carries only a reference: one copy instead of P-1, and the
// receivers reduce straight out of the board.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "transport/transport.h"

namespace coral::transport::shm {

class ShmLink;

class ShmBoard : public Board {
 public:
  // slots buffers of slot_bytes at base; messages of at most inline_max bytes travel inline in
  // the FIFO's control line, which beats any board.
  ShmBoard(std::byte* base, size_t slot_bytes, uint32_t slots, size_t inline_max);
  std::byte* acquire(size_t bytes) override;
  // `link` sent buf by reference as its message `seq` (counted from 1).
  void note(const std::byte* buf, ShmLink* link, uint32_t seq);
  uint64_t offset(const std::byte* buf) const { return static_cast<uint64_t>(buf - base_); }

 private:
  struct Use {
    ShmLink* link;
    uint32_t seq;
  };
  std::byte* base_;
  size_t slot_bytes_;
  uint32_t slots_;
  size_t inline_max_;
  uint32_t next_ = 0;
  std::vector<std::vector<Use>> uses_;  // per slot: the references not yet known released
};

}  // namespace coral::transport::shm
