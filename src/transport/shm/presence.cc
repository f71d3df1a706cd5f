#include "transport/shm/presence.h"

#include <immintrin.h>
#include <sched.h>

#include "transport/shm/memory.h"
#include "transport/shm/post.h"

namespace coral::transport::shm {

Yielder::Yielder(const Geometry& g, std::vector<const Segment*> segments, int me, std::vector<int> local_of)
    : geo_(g), segs_(std::move(segments)), me_(me), local_of_(std::move(local_of)) {}

Presence& Yielder::presence(int l) const { return segs_[l]->control()->presence; }

// Not waiting, or waiting for a counter that is already due.
bool Yielder::runnable(const Presence& p) const {
  const uint32_t w = p.wait.load(std::memory_order_acquire);
  if (!w) return true;
  const Watch watch = Watch::decode(w);
  const uint32_t target = p.target.load(std::memory_order_relaxed);
  if (watch.owner >= segs_.size()) return true;
  if (watch.fifo == kPostWatch) {
    if (!geo_.posts()) return true;
    const PostHeader& h = segs_[watch.owner]->posts(geo_)->ring[post_slot(target)];
    return reached(h.seq.load(std::memory_order_relaxed), target);
  }
  if (watch.fifo >= segs_.size()) return true;
  const FifoCtl* f = segs_[watch.owner]->fifo(geo_, static_cast<int>(watch.fifo));
  const uint32_t v = (watch.tail ? f->tail : f->head).load(std::memory_order_relaxed);
  return reached(v, target);
}

bool Yielder::worth_yielding(int peer) const {
  const int q = peer >= 0 && peer < static_cast<int>(local_of_.size()) ? local_of_[peer] : -1;
  if (q < 0) return true;
  const Presence& p = presence(q);
  return p.cpu.load(std::memory_order_relaxed) == sched_getcpu() || p.yielded.load(std::memory_order_relaxed) ||
         !runnable(p);
}

// Every 256th poll yields whatever the presence says: threads outside Coral, and a rank whose
// published CPU is stale (it moved), still get the core.
void Yielder::give_way(int peer) {
  if ((++polls_ & 255) != 0 && !worth_yielding(peer)) {
    _mm_pause();
    return;
  }
  auto& yielded = presence(me_).yielded;
  yielded.store(1, std::memory_order_relaxed);
  sched_yield();
  yielded.store(0, std::memory_order_relaxed);
}

}  // namespace coral::transport::shm
