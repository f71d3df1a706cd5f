// A shared-memory link: outbound FIFO in the peer's segment, inbound FIFO in ours. Large
// messages whose source stays put can go by reference: the receiver copies straight out of the
// sender's memory with cross-memory attach (process_vm_readv), one copy instead of two.
#pragma once
#include <sys/types.h>

#include <vector>

#include "transport/shm/board.h"
#include "transport/shm/memory.h"
#include "transport/transport.h"

namespace coral::transport::shm {

class ShmLink : public Link {
 public:
  // out/in: the FIFO control blocks; out_slots/in_slots: their payload rings. Messages up to
  // inline_max bytes travel in the slot's control line.
  // presence: this rank's, published while it waits (null: not published); me_l/peer_l: local
  // indices of this rank and the peer.
  // board/peer_board: ours to send from, the peer's as mapped here (both null: no boards).
  ShmLink(int peer, pid_t peer_pid, const Geometry& g, FifoCtl* out, std::byte* out_slots, FifoCtl* in,
          std::byte* in_slots, size_t direct_min, size_t inline_max, Presence* presence, uint32_t me_l,
          uint32_t peer_l, ShmBoard* board, const std::byte* peer_board);
  size_t max_message() const override { return geo_.slot_bytes; }
  int max_in_flight() const override { return static_cast<int>(geo_.nslots); }
  std::byte* send_acquire(size_t bytes, WaitMonitor& mon) override;
  void send_commit(size_t bytes, uint64_t tag) override;
  size_t direct_min_bytes() const override { return direct_min_; }
  void send_direct(const void* src, size_t bytes, uint64_t tag, WaitMonitor& mon) override;
  void flush(WaitMonitor& mon) override;
  Board* board() override { return board_; }
  void send_board(const std::byte* buf, size_t bytes, uint64_t tag, WaitMonitor& mon) override;
  // Whether the peer released our message `seq` (counted from 1); reads the shared tail only
  // when the last one seen does not tell.
  bool released(uint32_t seq);
  Message recv_peek(WaitMonitor& mon, bool want_local) override;
  void recv_read(const Message& m, void* dst) override;
  void recv_release() override;

 private:
  void wait_credit(WaitMonitor& mon);
  // Waits for the peer to release up to message `target` of ours, or (tail=false) to commit
  // message `target` of its own, publishing which counter it watches meanwhile.
  template <class Ready>
  void await(WaitMonitor& mon, bool tail, uint32_t target, Ready ready);
  void publish(uint32_t bytes_and_flags, uint64_t tag);
  void read_remote(void* dst, uint64_t addr, size_t bytes);

  int peer_;
  pid_t peer_pid_;
  Geometry geo_;
  FifoCtl* out_;
  std::byte* out_slots_;
  FifoCtl* in_;
  std::byte* in_slots_;
  size_t direct_min_;
  size_t inline_max_;
  Presence* presence_;
  Watch out_watch_, in_watch_;  // our FIFO in the peer's segment (tail), theirs in ours (head)
  ShmBoard* board_;
  const std::byte* peer_board_;
  uint32_t out_head_ = 0;       // only this side writes out_->head
  uint32_t out_tail_seen_ = 0;  // last tail read: released() re-reads it only when it does not tell
  uint32_t in_tail_ = 0;        // only this side writes in_->tail
  WaitMonitor* mon_ = nullptr;  // of the receive in progress: consulted when a direct read fails
  uint64_t read_from_ = 0;      // sender address of the by-reference message being received
  std::vector<uint64_t> unflushed_;  // our by-reference sends the peer may still be reading
};

// Whether this process can read peer_pid's memory (probed once per peer at connect).
bool can_read_process(pid_t peer_pid, const void* remote_probe, uint64_t expect);

}  // namespace coral::transport::shm
