// Layout of a rank's shared segment: a control page (abort flag and reason, presence, board), one inbound FIFO
// per local rank, then (host memory only) this rank's posts and their board. Each FIFO lives in
// the receiver's segment; the sender writes its slots. Posts live in the poster's segment.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "transport/shm/presence.h"

namespace coral::transport::shm {

constexpr uint32_t kMaxSlots = 64;

struct Control {
  std::atomic<uint32_t> abort;
  std::atomic<uint32_t> claimed;  // the first aborter writes why
  char why[1016];
  Presence presence;                 // what this rank waits for (written by it alone)
  alignas(64) std::byte board[256];  // Domain::own_board: written by this rank alone
};
static_assert(sizeof(Control) <= 4096);

// One cache line per slot: the sequence number, size and tag, and small messages inline, so a
// small message costs the receiver a single cache-line transfer.
constexpr size_t kInlineBytes = 48;
struct alignas(64) SlotMeta {
  std::atomic<uint32_t> seq;  // message number + 1 once the slot holds it
  uint32_t bytes;
  uint64_t tag;
  std::byte inline_data[kInlineBytes];
};
static_assert(sizeof(SlotMeta) == 64);

struct FifoCtl {
  alignas(64) std::atomic<uint32_t> head;  // messages committed (written by the sender)
  std::atomic<uint32_t> recv_sleeping;
  alignas(64) std::atomic<uint32_t> tail;  // messages released (written by the receiver)
  std::atomic<uint32_t> send_sleeping;
  SlotMeta meta[kMaxSlots];
};

// Posts (post.h): messages a rank publishes once for several local peers. Post s (from 1) sits
// in header s % kPostSlots, its payload inline or in the board buffer of that index.
constexpr uint32_t kPostSlots = 8;
constexpr int kMaxPostRanks = 64;  // local ranks beyond this send one-to-many messages one by one

struct alignas(64) PostHeader {
  std::atomic<uint32_t> seq;  // the post number once the header holds it; readers sleep on it
  uint32_t bytes;
  uint64_t tag;
  std::byte inline_data[kInlineBytes];
};
static_assert(sizeof(PostHeader) == 64);

// Lines by writer: the poster writes headers; readers count themselves in sleeping (rarely), and
// a reader writes acked[] in its own area (once per post read, a line that stays in its cache).
// Nobody wakes a poster waiting for an ack: that wait sleeps in short slices (see acquire()), so
// that a reader's ack is a plain store with no wake check behind it.
struct PostArea {
  PostHeader ring[kPostSlots];
  alignas(64) std::atomic<uint32_t> sleeping;              // readers asleep on a header of ours
  alignas(64) std::atomic<uint32_t> acked[kMaxPostRanks];  // as a reader: posts of rank l released
};

struct Geometry {
  size_t slot_bytes;
  uint32_t nslots;
  int nlocal;
  bool external = false;        // payload slots live outside the segment (device memory)
  size_t board_slot_bytes = 0;  // the poster's board buffers (kPostSlots of them; 0: no posts)
  size_t ctl_bytes() const { return 4096; }
  size_t fifo_header() const { return (sizeof(FifoCtl) + 4095) / 4096 * 4096; }
  size_t ring_bytes() const { return nslots * slot_bytes; }
  size_t fifo_bytes() const { return fifo_header() + (external ? 0 : ring_bytes()); }
  bool posts() const { return board_slot_bytes > 0; }
  size_t post_offset() const { return ctl_bytes() + static_cast<size_t>(nlocal) * fifo_bytes(); }
  size_t board_offset() const { return post_offset() + (posts() ? (sizeof(PostArea) + 4095) / 4096 * 4096 : 0); }
  size_t total() const { return board_offset() + board_slot_bytes * (posts() ? kPostSlots : 0); }
};

// A mapped segment; the creator unlinks the name once peers have attached.
class Segment {
 public:
  static Segment create(const std::string& name, size_t bytes);
  static Segment open(const std::string& name, size_t bytes);
  Segment() = default;
  Segment(Segment&& o) noexcept { *this = std::move(o); }
  Segment& operator=(Segment&& o) noexcept;
  ~Segment();
  std::byte* base() const { return base_; }
  Control* control() const { return reinterpret_cast<Control*>(base_); }
  FifoCtl* fifo(const Geometry& g, int local) const {
    return reinterpret_cast<FifoCtl*>(base_ + g.ctl_bytes() + local * g.fifo_bytes());
  }
  std::byte* slot(const Geometry& g, int local, uint32_t i) const {
    return base_ + g.ctl_bytes() + local * g.fifo_bytes() + g.fifo_header() + i * g.slot_bytes;
  }
  PostArea* posts(const Geometry& g) const { return reinterpret_cast<PostArea*>(base_ + g.post_offset()); }
  std::byte* board(const Geometry& g) const { return base_ + g.board_offset(); }
  void unlink();

 private:
  std::byte* base_ = nullptr;
  size_t bytes_ = 0;
  std::string name_;
  bool owner_ = false;
};

}  // namespace coral::transport::shm
