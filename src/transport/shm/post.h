// A rank's posts: one message published once for several local peers. One-shot all-reduce
// sends the same vector to all P-1 peers; through the FIFOs that is P-1 sends, each writing a
// line in a peer's segment and later reading its release. A post writes one header line in the
// poster's own segment (the payload inline, or in a board buffer beside it), and each reader
// acknowledges in a line of its own segment that the poster reads only when it reuses a header.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "transport/shm/memory.h"
#include "transport/shm/wakes.h"
#include "transport/transport.h"

namespace coral::transport::shm {

class ShmPosts : public Poster {
 public:
  // areas: every local rank's PostArea by local index (ours at me); board: our kPostSlots
  // buffers of board_bytes; local_of: per global rank, its local index or -1.
  ShmPosts(std::vector<PostArea*> areas, int me, std::byte* board, size_t board_bytes, std::vector<int> local_of,
           Wakes* wakes);
  size_t max_bytes() const override { return board_bytes_; }
  std::byte* acquire(size_t bytes, WaitMonitor& mon) override;
  uint32_t readers(const int* peers, size_t npeers) override;
  void commit(size_t bytes, uint64_t tag, uint32_t readers) override;
  // Whether every reader of the post that last used the next post's header released it.
  bool next_free();

 private:
  // A set of readers, by id (readers()); a header names the set its post went to. The sets
  // are the peer lists of the executor's plans, which a communicator's local peers fix: a
  // handful at most, kept.
  struct Readers {
    std::vector<int> peers;   // global ranks, as readers() was given them
    std::vector<int> locals;  // their local indices
    uint32_t through = 0;     // every one of them released our posts up to this one
  };
  // The first reader (local index) in `set` that has not released post `seq` of ours, or -1.
  // One check per post, not one per reader: the set remembers how far all of them got.
  int holding(uint32_t seq, Readers& set);

  std::vector<PostArea*> areas_;
  int me_;
  std::byte* board_;
  size_t board_bytes_;
  std::vector<int> local_of_;
  Wakes* wakes_;
  uint32_t posts_ = 0;
  std::vector<Readers> sets_;         // sets_[0]: no readers (headers not yet used)
  std::vector<uint32_t> set_of_;      // per header: the set its post went to
  std::vector<Wakes::Stamp> stamps_;  // per header: for wakes_
  static constexpr long kAckSliceNs = 1000 * 1000;
};

// Where post `seq` (from 1) of a poster lives.
inline uint32_t post_slot(uint32_t seq) { return seq % kPostSlots; }

}  // namespace coral::transport::shm
