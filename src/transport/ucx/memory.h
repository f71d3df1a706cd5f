// The slot rings of a UCX link: each slot holds one message (a small header, then the payload)
// and the UCP request moving it; receives are posted into slots ahead of time, in order, so UCP
// matches them to the peer's messages in order.
#pragma once
#include <ucp/api/ucp.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace coral::transport::ucx {

struct MsgHeader {
  uint64_t tag;    // the operation's tag
  uint64_t bytes;  // payload bytes after this header
};

struct Slot {
  void* request = nullptr;  // in flight while non-null and !done
  bool done = true;
  ucs_status_t status = UCS_OK;
  size_t length = 0;        // receive: bytes that arrived
  uint64_t sender_tag = 0;  // receive: the UCP tag it matched
};

class SlotRing {
 public:
  SlotRing(size_t payload_bytes, uint32_t nslots)
      : stride_(payload_bytes + sizeof(MsgHeader)), slots_(nslots), mem_(new std::byte[stride_ * nslots]) {}
  std::byte* buf(uint64_t seq) { return mem_.get() + (seq % slots_.size()) * stride_; }
  Slot& slot(uint64_t seq) { return slots_[seq % slots_.size()]; }
  size_t stride() const { return stride_; }
  uint32_t n() const { return static_cast<uint32_t>(slots_.size()); }

 private:
  size_t stride_;
  std::vector<Slot> slots_;
  std::unique_ptr<std::byte[]> mem_;
};

}  // namespace coral::transport::ucx
