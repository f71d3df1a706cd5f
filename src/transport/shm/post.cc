#include "transport/shm/post.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "base/error.h"
#include "transport/shm/presence.h"

namespace coral::transport::shm {

ShmPosts::ShmPosts(std::vector<PostArea*> areas, int me, std::byte* board, size_t board_bytes,
                   std::vector<int> local_of, Wakes* wakes)
    : areas_(std::move(areas)),
      me_(me),
      board_(board),
      board_bytes_(board_bytes),
      local_of_(std::move(local_of)),
      wakes_(wakes),
      sets_(1),
      set_of_(kPostSlots, 0),
      stamps_(kPostSlots, 0) {}

// Every reader's acknowledgement is read afresh, so that `through` jumps ahead by as many
// posts as the slowest reader is ahead: the same reads per post as reading each one only when
// it no longer tells, but the posts in between check one number.
int ShmPosts::holding(uint32_t seq, Readers& set) {
  if (reached(set.through, seq)) return -1;
  uint32_t ahead = UINT32_MAX;  // of seq, by the slowest reader (counters wrap: a distance)
  for (int l : set.locals) {
    const uint32_t acked = areas_[l]->acked[me_].load(std::memory_order_acquire);
    if (!reached(acked, seq)) return l;
    ahead = std::min(ahead, acked - seq);
  }
  set.through = set.locals.empty() ? seq : seq + ahead;
  return -1;
}

bool ShmPosts::next_free() { return holding(posts_ + 1 - kPostSlots, sets_[set_of_[post_slot(posts_ + 1)]]) < 0; }

// In the one-shot all-reduce a header comes back long before its next turn: to post call k+8 a
// rank must have finished call k+7, which needed every peer's post of that call, made after the
// peer had read call k. So the wait below is for other uses, and reads acknowledgements rarely:
// one read tells about every post up to it.
std::byte* ShmPosts::acquire(size_t bytes, WaitMonitor& mon) {
  if (bytes > board_bytes_) fail(coralInternalError, "post larger than the board's buffers");
  const uint32_t seq = posts_ + 1, slot = post_slot(seq);
  const uint32_t prev = seq - kPostSlots;
  Readers& readers = sets_[set_of_[slot]];
  for (int l; (l = holding(prev, readers)) >= 0;) {
    std::atomic<uint32_t>& word = areas_[l]->acked[me_];
    int peer = -1;
    for (size_t g = 0; g < local_of_.size(); ++g)
      if (local_of_[g] == l) peer = static_cast<int>(g);
    wakes_->flush();  // the reader may sleep on one of our posts
    // No reader wakes us (see PostArea): sleep a millisecond at a time, counted where no one looks.
    Override<long> slices(mon.sleep_slice_ns, std::min(mon.sleep_slice_ns, kAckSliceNs));
    std::atomic<uint32_t> unwatched{0};
    wait_until(mon, peer, word, unwatched, [&] { return reached(word.load(std::memory_order_acquire), prev); });
  }
  PostHeader& h = areas_[me_]->ring[slot];
  return bytes <= kInlineBytes ? h.inline_data : board_ + static_cast<size_t>(slot) * board_bytes_;
}

uint32_t ShmPosts::readers(const int* peers, size_t npeers) {
  for (uint32_t i = 1; i < sets_.size(); ++i)
    if (sets_[i].peers.size() == npeers && std::equal(sets_[i].peers.begin(), sets_[i].peers.end(), peers)) return i;
  Readers r{std::vector<int>(peers, peers + npeers), {}};
  for (int g : r.peers) {
    const int l = g >= 0 && static_cast<size_t>(g) < local_of_.size() ? local_of_[g] : -1;
    if (l < 0 || l == me_) fail(coralInternalError, "post to rank " + std::to_string(g) + ", not a local peer");
    r.locals.push_back(l);
  }
  sets_.push_back(std::move(r));
  return static_cast<uint32_t>(sets_.size() - 1);
}

void ShmPosts::commit(size_t bytes, uint64_t tag, uint32_t set) {
  if (set == 0 || set >= sets_.size()) fail(coralInternalError, "post to an unknown set of readers");
  const uint32_t seq = posts_ + 1;
  set_of_[post_slot(seq)] = set;
  PostHeader& h = areas_[me_]->ring[post_slot(seq)];
  h.bytes = static_cast<uint32_t>(bytes);
  h.tag = tag;
  h.seq.store(seq, std::memory_order_release);
  posts_ = seq;
  wakes_->add(&h.seq, &areas_[me_]->sleeping, stamps_[post_slot(seq)]);
}

}  // namespace coral::transport::shm
