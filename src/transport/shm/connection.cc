#include "transport/shm/connection.h"

namespace coral::transport::shm {

ShmLink::ShmLink(int peer, const Geometry& g, const Segment& mine, int my_local,
                 const Segment& theirs, int peer_local)
    : peer_(peer),
      geo_(g),
      out_(theirs.fifo(g, my_local)),
      out_slots_(theirs.slot(g, my_local, 0)),
      in_(mine.fifo(g, peer_local)),
      in_slots_(mine.slot(g, peer_local, 0)) {}

std::byte* ShmLink::send_acquire(WaitMonitor& mon) {
  const uint32_t n = geo_.nslots;
  wait_until(mon, peer_, out_->tail, out_->send_sleeping,
             [&] { return out_head_ - out_->tail.load(std::memory_order_acquire) < n; });
  return out_slots_ + static_cast<size_t>(out_head_ % n) * geo_.slot_bytes;
}

void ShmLink::send_commit(size_t bytes, uint64_t tag) {
  out_->meta[out_head_ % geo_.nslots] = SlotMeta{bytes, tag};
  out_->head.store(++out_head_, std::memory_order_seq_cst);
  wake_if_sleeping(out_->head, out_->recv_sleeping);
}

Message ShmLink::recv_peek(WaitMonitor& mon) {
  wait_until(mon, peer_, in_->head, in_->recv_sleeping,
             [&] { return in_->head.load(std::memory_order_acquire) != in_tail_; });
  const uint32_t i = in_tail_ % geo_.nslots;
  const SlotMeta m = in_->meta[i];
  return Message{in_slots_ + static_cast<size_t>(i) * geo_.slot_bytes, m.bytes, m.tag};
}

void ShmLink::recv_release() {
  in_->tail.store(++in_tail_, std::memory_order_seq_cst);
  wake_if_sleeping(in_->tail, in_->send_sleeping);
}

}  // namespace coral::transport::shm
