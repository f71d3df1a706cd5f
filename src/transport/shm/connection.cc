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

std::byte* ShmLink::send_acquire(size_t bytes, WaitMonitor& mon) {
  const uint32_t n = geo_.nslots;
  if (out_head_ - out_tail_seen_ >= n)
    wait_until(mon, peer_, out_->tail, out_->send_sleeping, [&] {
      out_tail_seen_ = out_->tail.load(std::memory_order_acquire);
      return out_head_ - out_tail_seen_ < n;
    });
  const uint32_t i = out_head_ % n;
  if (bytes <= kInlineBytes) return out_->meta[i].inline_data;
  return out_slots_ + static_cast<size_t>(i) * geo_.slot_bytes;
}

void ShmLink::send_commit(size_t bytes, uint64_t tag) {
  SlotMeta& m = out_->meta[out_head_ % geo_.nslots];
  m.bytes = static_cast<uint32_t>(bytes);
  m.tag = tag;
  ++out_head_;
  m.seq.store(out_head_, std::memory_order_release);  // what the receiver polls
  out_->head.store(out_head_, std::memory_order_seq_cst);  // what a sleeping receiver waits on
  wake_if_sleeping(out_->head, out_->recv_sleeping);
}

Message ShmLink::recv_peek(WaitMonitor& mon) {
  const uint32_t i = in_tail_ % geo_.nslots;
  SlotMeta& m = in_->meta[i];
  const uint32_t want = in_tail_ + 1;
  wait_until(mon, peer_, in_->head, in_->recv_sleeping,
             [&] { return m.seq.load(std::memory_order_acquire) == want; });
  const std::byte* data = m.bytes <= kInlineBytes ? m.inline_data : in_slots_ + static_cast<size_t>(i) * geo_.slot_bytes;
  return Message{data, m.bytes, m.tag};
}

void ShmLink::recv_release() {
  in_->tail.store(++in_tail_, std::memory_order_seq_cst);
  wake_if_sleeping(in_->tail, in_->send_sleeping);
}

}  // namespace coral::transport::shm
