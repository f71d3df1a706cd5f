// A shared-memory link: outbound FIFO in the peer's segment, inbound FIFO in ours.
#pragma once
#include "transport/shm/memory.h"
#include "transport/transport.h"

namespace coral::transport::shm {

class ShmLink : public Link {
 public:
  ShmLink(int peer, const Geometry& g, const Segment& mine, int my_local, const Segment& theirs,
          int peer_local);
  size_t max_message() const override { return geo_.slot_bytes; }
  int max_in_flight() const override { return static_cast<int>(geo_.nslots); }
  std::byte* send_acquire(size_t bytes, WaitMonitor& mon) override;
  void send_commit(size_t bytes, uint64_t tag) override;
  Message recv_peek(WaitMonitor& mon) override;
  void recv_release() override;

 private:
  int peer_;
  Geometry geo_;
  FifoCtl* out_;
  std::byte* out_slots_;
  FifoCtl* in_;
  std::byte* in_slots_;
  uint32_t out_head_ = 0;  // only this side writes out_->head
  uint32_t out_tail_seen_ = 0;  // last tail read: re-read only when the FIFO looks full
  uint32_t in_tail_ = 0;   // only this side writes in_->tail
};

}  // namespace coral::transport::shm
