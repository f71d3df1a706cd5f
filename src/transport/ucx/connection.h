// A UCX link: one UCP endpoint to a peer. Sends go out of a ring of staging slots (a slot is
// reused once UCP says its send completed); receives are pre-posted into a ring of slots, and
// the executor reduces straight out of the slot. Sends are synchronous: a staging slot is reused once the peer matched
// its message to a posted receive, which bounds what a sender has in flight the way credits do.
#pragma once
#include <string>

#include "transport/transport.h"
#include "transport/ucx/memory.h"

namespace coral::transport::ucx {

class UcxDomain;

// Posts a tagged receive into buf whose completion lands in slot; returns UCP's request or error.
ucs_status_ptr_t post_tag_recv(ucp_worker_h worker, Slot& slot, void* buf, size_t len, uint64_t tag, uint64_t mask);

// UCP tags: the kind in the top byte, the sender's rank in the low 32 bits.
enum class TagKind : uint64_t { Data = 0, Abort = 1, Bye = 2 };
inline uint64_t ucp_tag(TagKind k, int rank) { return (static_cast<uint64_t>(k) << 56) | static_cast<uint32_t>(rank); }
constexpr uint64_t kFullMask = ~uint64_t{0};
constexpr uint64_t kKindMask = uint64_t{0xff} << 56;

class UcxLink : public Link {
 public:
  UcxLink(UcxDomain* dom, int me, int peer, ucp_ep_h ep, size_t slot_bytes, uint32_t nslots);
  ~UcxLink() override;
  size_t max_message() const override { return slot_bytes_; }
  int max_in_flight() const override { return static_cast<int>(out_.n()); }
  std::byte* send_acquire(size_t bytes, WaitMonitor& mon) override;
  void send_commit(size_t bytes, uint64_t tag) override;
  Message recv_peek(WaitMonitor& mon, bool want_local) override;
  void recv_read(const Message& m, void* dst) override;
  void recv_release() override;
  bool send_ready(size_t bytes) override;
  bool recv_ready() override;

  void post_receives();  // fills the receive ring (after every endpoint exists)
  void cancel_receives();
  bool sends_pending();
  void lose(const std::string& why) {
    if (failed_.empty()) failed_ = why;
  }
  const std::string& failure() const { return failed_; }
  void set_bye() { bye_ = true; }
  bool closed_cleanly() const { return bye_; }
  ucp_ep_h ep() const { return ep_; }
  void set_ep(ucp_ep_h ep) { ep_ = ep; }
  void forget_ep() { ep_ = nullptr; }
  int peer() const { return peer_; }

 private:
  void post_receive(uint64_t seq);
  void reap(Slot& s);
  // A probe: the slot's completion, a failure or an abort, after a pass of the worker if needed.
  bool probe(const Slot& s);

  UcxDomain* dom_;
  int me_, peer_;
  ucp_ep_h ep_;
  size_t slot_bytes_;
  SlotRing out_, in_;
  uint64_t out_seq_ = 0, in_seq_ = 0;
  std::string failed_;
  bool bye_ = false;
};

}  // namespace coral::transport::ucx
