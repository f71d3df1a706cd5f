#include "transport/shm/connection.h"

#include <sched.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "base/error.h"
#include "kernels/copy.h"

// ThreadSanitizer tracks synchronisation by address, but ranks that are threads map each other's
// segments at different addresses, so it cannot see the FIFO's release/acquire pairs. Data read
// by reference from the sender's own memory is the one place that matters: annotate it there.
#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#define CORAL_TSAN_ACQUIRE(p) __tsan_acquire(reinterpret_cast<void*>(p))
#define CORAL_TSAN_RELEASE(p) __tsan_release(reinterpret_cast<void*>(p))
#else
#define CORAL_TSAN_ACQUIRE(p) ((void)(p))
#define CORAL_TSAN_RELEASE(p) ((void)(p))
#endif

namespace coral::transport::shm {

namespace {
// In SlotMeta::bytes: the payload is in the sender's memory (read with CMA).
constexpr uint32_t kDirect = 0x80000000u;
}  // namespace

ShmLink::ShmLink(int peer, pid_t peer_pid, const Geometry& g, FifoCtl* out, std::byte* out_slots, FifoCtl* in,
                 std::byte* in_slots, size_t direct_min, bool cma, size_t inline_max, Presence* presence, uint32_t me_l,
                 uint32_t peer_l, PostLinks posts, Wakes* wakes)
    : peer_(peer),
      peer_pid_(peer_pid),
      geo_(g),
      out_(out),
      out_slots_(out_slots),
      in_(in),
      in_slots_(in_slots),
      direct_min_(direct_min),
      cma_(cma),
      same_process_(peer_pid == getpid()),
      inline_max_(inline_max),
      presence_(presence),
      out_watch_{peer_l, me_l, true},
      in_watch_{me_l, peer_l, false},
      post_watch_{peer_l, kPostWatch, false},
      me_l_(me_l),
      posts_(posts),
      wakes_(wakes) {}

template <class Ready>
void ShmLink::await(WaitMonitor& mon, Watch watch, uint32_t target, std::atomic<uint32_t>& word,
                    std::atomic<uint32_t>& sleeping, Ready ready) {
  if (ready()) return;
  if (wakes_) wakes_->flush();  // whoever we wait for may be asleep until we wake it
  if (!presence_) return wait_until(mon, peer_, word, sleeping, ready);
  // Target before the watch: a reader that sees the watch sees its target.
  presence_->cpu.store(sched_getcpu(), std::memory_order_relaxed);
  presence_->target.store(target, std::memory_order_relaxed);
  presence_->wait.store(watch.encode(), std::memory_order_release);
  struct Clear {
    Presence* p;
    ~Clear() {
      p->wait.store(0, std::memory_order_relaxed);
      p->cpu.store(sched_getcpu(), std::memory_order_relaxed);
    }
  } clear{presence_};
  wait_until(mon, peer_, word, sleeping, ready);
}

void ShmLink::wait_credit(WaitMonitor& mon) {
  const uint32_t n = geo_.nslots;
  if (out_head_ - out_tail_seen_ >= n) {
    const uint32_t due = out_head_ - n + 1;
    await(mon, out_watch_, due, out_->tail, out_->send_sleeping, [&] { return released(due); });
  }
}

std::byte* ShmLink::send_acquire(size_t bytes, WaitMonitor& mon) {
  wait_credit(mon);
  const uint32_t i = out_head_ % geo_.nslots;
  if (bytes <= inline_max_) return out_->meta[i].inline_data;
  return out_slots_ + static_cast<size_t>(i) * geo_.slot_bytes;
}

void ShmLink::publish(uint32_t bytes_and_flags, uint64_t tag) {
  SlotMeta& m = out_->meta[out_head_ % geo_.nslots];
  m.bytes = bytes_and_flags;
  m.tag = tag;
  ++out_head_;
  m.seq.store(out_head_, std::memory_order_release);       // what the receiver polls
  out_->head.store(out_head_, std::memory_order_release);  // what a sleeping receiver waits on
  bumped(out_->head, out_->recv_sleeping, head_stamp_);
}

void ShmLink::bumped(std::atomic<uint32_t>& word, std::atomic<uint32_t>& sleeping, Wakes::Stamp& stamp) {
  if (wakes_) return wakes_->add(&word, &sleeping, stamp);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  wake_if_sleeping(word, sleeping);
}

void ShmLink::send_commit(size_t bytes, uint64_t tag) { publish(static_cast<uint32_t>(bytes), tag); }

bool ShmLink::direct_ok(const void* src, size_t bytes) const {
  if (bytes < direct_min_) return false;
  return cma_ || same_process_ || registered_region(src, bytes).has_value();
}

void ShmLink::send_direct(const void* src, size_t bytes, uint64_t tag, WaitMonitor& mon) {
  wait_credit(mon);
  uint64_t addr = reinterpret_cast<uintptr_t>(src);
  CORAL_TSAN_RELEASE(addr);
  unflushed_.push_back(addr);
  std::byte* line = out_->meta[out_head_ % geo_.nslots].inline_data;
  std::memcpy(line, &addr, sizeof addr);
  // A source in registered memory names its region, which the receiver maps and reads in place.
  RegionRef ref{};
  if (std::optional<Region> r = registered_region(src, bytes))
    ref = {r->id, reinterpret_cast<uintptr_t>(r->base), r->size, r->fd};
  std::memcpy(line + sizeof addr, &ref, sizeof ref);
  publish(static_cast<uint32_t>(bytes) | kDirect, tag);
}

bool ShmLink::released(uint32_t seq) {
  if (reached(out_tail_seen_, seq)) return true;
  out_tail_seen_ = out_->tail.load(std::memory_order_acquire);
  return reached(out_tail_seen_, seq);
}

void ShmLink::flush(WaitMonitor& mon) {
  if (out_tail_seen_ != out_head_)
    await(mon, out_watch_, out_head_, out_->tail, out_->send_sleeping, [&] { return released(out_head_); });
  for (uint64_t a : unflushed_) CORAL_TSAN_ACQUIRE(a);  // the receiver is done reading them
  unflushed_.clear();
}

void ShmLink::read_remote(void* dst, uint64_t addr, size_t bytes) {
  CORAL_TSAN_ACQUIRE(addr);
  read_from_ = addr;
  if (same_process_) {  // ranks that are threads of one process
    kernels::copy_streaming(dst, reinterpret_cast<const void*>(addr), bytes);
    return;
  }
  size_t done = 0;
  while (done < bytes) {
    iovec local{static_cast<char*>(dst) + done, bytes - done};
    iovec remote{reinterpret_cast<void*>(addr + done), bytes - done};
    ssize_t k = process_vm_readv(peer_pid_, &local, 1, &remote, 1, 0);
    if (k <= 0) {
      if (k < 0 && errno == EINTR) continue;
      int err = k < 0 ? errno : EIO;
      // The peer may have died or aborted meanwhile: report that (with its reason), not ESRCH.
      if (mon_) mon_->check(peer_);
      if (err == ESRCH)
        fail(coralRemoteError, "rank " + std::to_string(peer_) + " (pid " + std::to_string(peer_pid_) +
                                   ") exited while this rank read its data");
      fail_errno("cross-memory read from rank " + std::to_string(peer_) + " (pid " + std::to_string(peer_pid_) + ")",
                 err);
    }
    done += static_cast<size_t>(k);
  }
}

Message ShmLink::recv_peek(WaitMonitor& mon, bool want_local) {
  mon_ = &mon;
  const uint32_t i = in_tail_ % geo_.nslots;
  SlotMeta& m = in_->meta[i];
  const uint32_t want = in_tail_ + 1;
  Message other{};
  unsigned polls = 0;
  auto post = [&](Message* o) { return post_waiting(o); };
  await(mon, in_watch_, want, in_->head, in_->recv_sleeping,
        [&] { return m.seq.load(std::memory_order_acquire) == want || stray(mon, polls, post, &other); });
  if (m.seq.load(std::memory_order_acquire) != want) return other;  // the caller reports the mismatch
  const size_t bytes = m.bytes & ~kDirect;
  std::byte* slot = in_slots_ + static_cast<size_t>(i) * geo_.slot_bytes;
  if (m.bytes & kDirect) {
    if (!want_local) return Message{nullptr, bytes, m.tag};
    uint64_t addr;
    std::memcpy(&addr, m.inline_data, sizeof addr);
    if (const std::byte* p = in_place(m.inline_data, addr, bytes)) return Message{p, bytes, m.tag};
    read_remote(slot, addr, bytes);  // the slot is free: the sender did not use it
    return Message{slot, bytes, m.tag};
  }
  return Message{bytes <= inline_max_ ? m.inline_data : slot, bytes, m.tag};
}

void ShmLink::recv_read(const Message& msg, void* dst) {
  if (msg.data) {
    kernels::copy_streaming(dst, msg.data, msg.bytes);
    return;
  }
  uint64_t addr;
  const std::byte* line = in_->meta[in_tail_ % geo_.nslots].inline_data;
  std::memcpy(&addr, line, sizeof addr);
  if (const std::byte* p = in_place(line, addr, msg.bytes)) return kernels::copy_streaming(dst, p, msg.bytes);
  read_remote(dst, addr, msg.bytes);
}

// A by-reference message readable where it lies: the sender's own memory when the ranks are
// threads of one process, or its registered region as mapped here. nullptr: read it by
// cross-memory attach. The sender keeps it unchanged until the operation ends (flush).
const std::byte* ShmLink::in_place(const std::byte* line, uint64_t addr, size_t bytes) {
  if (same_process_) {
    CORAL_TSAN_ACQUIRE(addr);
    read_from_ = addr;
    return reinterpret_cast<const std::byte*>(addr);
  }
  RegionRef ref;
  std::memcpy(&ref, line + sizeof addr, sizeof ref);
  if (ref.id == 0) return nullptr;
  if (!regions_) regions_ = std::make_unique<PeerRegions>(peer_pid_);
  const std::byte* p = regions_->find(ref, addr, bytes);
  if (p) read_from_ = addr;
  return p;
}

void ShmLink::recv_release() {
  if (read_from_) CORAL_TSAN_RELEASE(read_from_);
  read_from_ = 0;
  in_->tail.store(++in_tail_, std::memory_order_release);
  bumped(in_->tail, in_->send_sleeping, tail_stamp_);
}

// The probes test exactly what wait_credit() and recv_peek() wait for.
bool ShmLink::send_ready(size_t) {
  const uint32_t n = geo_.nslots;
  if (out_head_ - out_tail_seen_ < n || released(out_head_ - n + 1)) return true;
  return probe_failure();
}

bool ShmLink::recv_ready() {
  if (in_->meta[in_tail_ % geo_.nslots].seq.load(std::memory_order_acquire) == in_tail_ + 1) return true;
  return probe_failure();
}

bool ShmLink::probe_failure() {
  // A peer asleep on a bump of ours that is still deferred would otherwise only see it on its
  // next sleep slice: an engine that only probes never reaches an await() that flushes.
  if (wakes_) wakes_->flush();
  if (!health_ || peer_gone_) return peer_gone_;
  if (!health_->remote_abort().empty()) return true;  // one load of our control page
  // Peer death costs a poll(2) of its pidfd: not on every probe of a busy engine.
  constexpr unsigned kDeathPoll = 64;
  if (++not_ready_ % kDeathPoll == 0 && !health_->peer_failure(peer_).empty()) peer_gone_ = true;
  return peer_gone_;
}

Message ShmLink::post_message(uint32_t slot) const {
  const PostHeader& h = posts_.peer_area->ring[slot];
  const std::byte* data =
      h.bytes <= kInlineBytes ? h.inline_data : posts_.peer_board + static_cast<size_t>(slot) * posts_.board_bytes;
  return Message{data, h.bytes, h.tag};
}

// The wait is out of line, and the fast path is a leaf: in a one-shot call most posts are
// already there, and with the wait inlined each peek paid for saving the registers it needs.
Message ShmLink::post_peek(WaitMonitor& mon) {
  const uint32_t want = posts_read_ + 1, slot = post_slot(want);
  if (posts_.peer_area->ring[slot].seq.load(std::memory_order_acquire) != want) [[unlikely]]
    return wait_post(mon, want);
  return post_message(slot);
}

Message ShmLink::wait_post(WaitMonitor& mon, uint32_t want) {
  PostHeader& h = posts_.peer_area->ring[post_slot(want)];
  unsigned polls = 0;
  Message other{};
  auto fifo = [&](Message* o) { return fifo_waiting(o); };
  await(mon, post_watch_, want, h.seq, posts_.peer_area->sleeping,
        [&] { return h.seq.load(std::memory_order_acquire) == want || stray(mon, polls, fifo, &other); });
  if (h.seq.load(std::memory_order_acquire) != want) return other;  // the caller reports the mismatch
  return post_message(post_slot(want));
}

bool ShmLink::fifo_waiting(Message* m) const {
  const SlotMeta& s = in_->meta[in_tail_ % geo_.nslots];
  if (s.seq.load(std::memory_order_acquire) != in_tail_ + 1) return false;
  *m = Message{nullptr, s.bytes & ~kDirect, s.tag};
  return true;
}

bool ShmLink::post_waiting(Message* m) const {
  if (!posts_.mine) return false;
  const PostHeader& h = posts_.peer_area->ring[post_slot(posts_read_ + 1)];
  if (h.seq.load(std::memory_order_acquire) != posts_read_ + 1) return false;
  *m = Message{nullptr, h.bytes, h.tag};
  return true;
}

void ShmLink::post_release() {
  std::atomic<uint32_t>& acked = posts_.my_area->acked[post_watch_.owner];
  acked.store(++posts_read_, std::memory_order_release);  // no wake: see PostArea
}

bool can_read_process(pid_t peer_pid, const void* remote_probe, uint64_t expect) {
  if (peer_pid == getpid()) return true;
  uint64_t got = 0;
  iovec local{&got, sizeof got};
  iovec remote{const_cast<void*>(remote_probe), sizeof got};
  return process_vm_readv(peer_pid, &local, 1, &remote, 1, 0) == sizeof got && got == expect;
}

}  // namespace coral::transport::shm
