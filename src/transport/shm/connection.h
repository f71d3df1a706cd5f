// A shared-memory link: outbound FIFO in the peer's segment, inbound FIFO in ours. Large
// messages whose source stays put can go by reference: the receiver reads them where they lie
// (registered memory it maps, or its own process's), or copies them straight out of the sender's
// memory with cross-memory attach (process_vm_readv) where that pays: one copy instead of two.
#pragma once
#include <sys/types.h>

#include <memory>
#include <vector>

#include "transport/shm/memory.h"
#include "transport/shm/post.h"
#include "transport/shm/regions.h"
#include "transport/shm/wakes.h"
#include "transport/transport.h"

namespace coral::transport::shm {

// What a link needs to read its peer's posts (all null: no posts on this domain).
struct PostLinks {
  ShmPosts* mine = nullptr;       // our poster, shared by the domain's links
  PostArea* my_area = nullptr;    // where we acknowledge the peer's posts
  PostArea* peer_area = nullptr;  // the peer's headers, as mapped here
  const std::byte* peer_board = nullptr;
  size_t board_bytes = 0;
};

class ShmLink : public Link {
 public:
  // out/in: the FIFO control blocks; out_slots/in_slots: their payload rings. Messages up to
  // inline_max bytes travel in the slot's control line.
  // presence: this rank's, published while it waits (null: not published); me_l/peer_l: local
  // indices of this rank and the peer.
  // wakes: shared by the domain's links, which then defer their wake checks (null: check at once).
  ShmLink(int peer, pid_t peer_pid, const Geometry& g, FifoCtl* out, std::byte* out_slots, FifoCtl* in,
          std::byte* in_slots, size_t direct_min, bool cma, size_t inline_max, Presence* presence, uint32_t me_l,
          uint32_t peer_l, PostLinks posts, Wakes* wakes);
  size_t max_message() const override { return geo_.slot_bytes; }
  int max_in_flight() const override { return static_cast<int>(geo_.nslots); }
  std::byte* send_acquire(size_t bytes, WaitMonitor& mon) override;
  void send_commit(size_t bytes, uint64_t tag) override;
  bool direct_ok(const void* src, size_t bytes) const override;
  void send_direct(const void* src, size_t bytes, uint64_t tag, WaitMonitor& mon) override;
  void flush(WaitMonitor& mon) override;
  Poster* poster() override { return posts_.mine; }
  Message post_peek(WaitMonitor& mon) override;
  void post_release() override;
  // Whether the peer released our message `seq` (counted from 1); reads the shared tail only
  // when the last one seen does not tell.
  bool released(uint32_t seq);
  Message recv_peek(WaitMonitor& mon, bool want_local) override;
  void recv_read(const Message& m, void* dst) override;
  void recv_release() override;
  bool send_ready(size_t bytes) override;
  bool recv_ready() override;
  // The domain the probes ask about this peer's failure and aborts, as a monitor's check()
  // would (null: they never report one).
  void watch_health(Domain* d) { health_ = d; }

 private:
  // A probe that found the link not ready: wakes peers our deferred bumps left asleep (as
  // await() does before it waits), and tells whether the peer failed or the domain aborted.
  bool probe_failure();
  void wait_credit(WaitMonitor& mon);
  // Waits until ready(), publishing meanwhile that `watch` is due to reach `target`; word is the
  // futex the other side bumps, sleeping our flag for it.
  template <class Ready>
  void await(WaitMonitor& mon, Watch watch, uint32_t target, std::atomic<uint32_t>& word,
             std::atomic<uint32_t>& sleeping, Ready ready);
  void publish(uint32_t bytes_and_flags, uint64_t tag);
  // Waits for the peer's post `want` and returns it; or, when a message of another operation came
  // on the FIFO instead, that message.
  [[gnu::noinline]] Message wait_post(WaitMonitor& mon, uint32_t want);
  // The peer's post in header `slot`, which has come.
  Message post_message(uint32_t slot) const;
  // The peer's next message on the other channel (FIFO or posts), if any: its size and tag.
  bool fifo_waiting(Message* m) const;
  bool post_waiting(Message* m) const;
  // Whether `other` (a *_waiting check) shows a message of another operation than mon's: then
  // the one awaited on this channel will not come. Checked on every 16th poll.
  template <class Other>
  bool stray(WaitMonitor& mon, unsigned& polls, Other other, Message* m) const {
    return mon.tag && (++polls & 15) == 0 && other(m) && m->tag != mon.tag;
  }
  void bumped(std::atomic<uint32_t>& word, std::atomic<uint32_t>& sleeping, Wakes::Stamp& stamp);
  void read_remote(void* dst, uint64_t addr, size_t bytes);
  const std::byte* in_place(const std::byte* line, uint64_t addr, size_t bytes);

  int peer_;
  pid_t peer_pid_;
  Geometry geo_;
  FifoCtl* out_;
  std::byte* out_slots_;
  FifoCtl* in_;
  std::byte* in_slots_;
  size_t direct_min_;
  bool cma_;           // unregistered sources go by reference too (cross-memory attach)
  bool same_process_;  // ranks that are threads of one process read each other in place
  size_t inline_max_;
  Presence* presence_;
  Watch out_watch_, in_watch_, post_watch_;  // our FIFO's tail, theirs's head, the peer's posts
  uint32_t me_l_;
  PostLinks posts_;
  uint32_t posts_read_ = 0;  // of the peer's posts
  Wakes* wakes_;
  Wakes::Stamp head_stamp_ = 0, tail_stamp_ = 0;  // out_->head, in_->tail
  uint32_t out_head_ = 0;                         // only this side writes out_->head
  uint32_t out_tail_seen_ = 0;                    // last tail read: released() re-reads it only when it does not tell
  uint32_t in_tail_ = 0;                          // only this side writes in_->tail
  WaitMonitor* mon_ = nullptr;                    // of the receive in progress: consulted when a direct read fails
  uint64_t read_from_ = 0;                        // sender address of the by-reference message being received
  std::vector<uint64_t> unflushed_;               // our by-reference sends the peer may still be reading
  std::unique_ptr<PeerRegions> regions_;          // the peer's registered regions mapped here, made on first use
  Domain* health_ = nullptr;
  unsigned not_ready_ = 0;  // probes that found nothing (a few of them poll for the peer's death)
  bool peer_gone_ = false;  // a probe saw the peer's death: the probes stay true
};

// Whether this process can read peer_pid's memory (probed once per peer at connect).
bool can_read_process(pid_t peer_pid, const void* remote_probe, uint64_t expect);

}  // namespace coral::transport::shm
