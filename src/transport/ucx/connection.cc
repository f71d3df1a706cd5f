#include "transport/ucx/connection.h"

#include <fmt/format.h>

#include <cstring>

#include "base/error.h"
#include "transport/ucx/domain.h"

namespace coral::transport::ucx {

namespace {

void on_send(void*, ucs_status_t status, void* user) {
  auto* s = static_cast<Slot*>(user);
  s->status = status;
  s->done = true;
}

void on_tag_recv(void*, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user) {
  auto* s = static_cast<Slot*>(user);
  s->status = status;
  s->length = status == UCS_OK ? info->length : 0;
  if (status == UCS_OK) s->sender_tag = info->sender_tag;
  s->done = true;
}

}  // namespace

ucs_status_ptr_t post_tag_recv(ucp_worker_h worker, Slot& s, void* buf, size_t len, uint64_t tag, uint64_t mask) {
  s.done = false;
  s.status = UCS_INPROGRESS;
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  p.cb.recv = on_tag_recv;
  p.user_data = &s;
  return ucp_tag_recv_nbx(worker, buf, len, tag, mask, &p);
}

UcxLink::UcxLink(UcxDomain* dom, int me, int peer, ucp_ep_h ep, size_t slot_bytes, uint32_t nslots)
    : dom_(dom),
      me_(me),
      peer_(peer),
      ep_(ep),
      slot_bytes_(slot_bytes),
      out_(slot_bytes, nslots),
      in_(slot_bytes, nslots) {}

UcxLink::~UcxLink() = default;

void UcxLink::reap(Slot& s) {
  if (s.request && s.done) {
    ucp_request_free(s.request);
    s.request = nullptr;
  }
}

void UcxLink::post_receive(uint64_t seq) {
  Slot& s = in_.slot(seq);
  ucs_status_ptr_t r =
      post_tag_recv(dom_->worker(), s, in_.buf(seq), in_.stride(), ucp_tag(TagKind::Data, peer_), kFullMask);
  if (UCS_PTR_IS_ERR(r))
    fail(coralSystemError,
         fmt::format("ucx: posting a receive from rank {}: {}", peer_, ucs_status_string(UCS_PTR_STATUS(r))));
  s.request = r;
}

void UcxLink::post_receives() {
  for (uint32_t i = 0; i < in_.n(); ++i) post_receive(i);
}

void UcxLink::cancel_receives() {
  for (uint32_t i = 0; i < in_.n(); ++i) {
    Slot& s = in_.slot(i);
    if (s.request && !s.done) ucp_request_cancel(dom_->worker(), s.request);
  }
  for (int spins = 0; spins < 1000; ++spins) {
    bool all = true;
    for (uint32_t i = 0; i < in_.n(); ++i) all &= in_.slot(i).done;
    if (all) break;
    ucp_worker_progress(dom_->worker());
  }
  for (uint32_t i = 0; i < in_.n(); ++i) reap(in_.slot(i));
  for (uint32_t i = 0; i < out_.n(); ++i) reap(out_.slot(i));
}

bool UcxLink::sends_pending() {
  if (!failed_.empty()) return false;
  for (uint32_t i = 0; i < out_.n(); ++i) {
    Slot& s = out_.slot(i);
    reap(s);
    if (!s.done) return true;
  }
  return false;
}

std::byte* UcxLink::send_acquire(size_t bytes, WaitMonitor& mon) {
  if (bytes > slot_bytes_) fail(coralInternalError, "ucx: message larger than a slot");
  Slot& s = out_.slot(out_seq_);
  if (!s.done)
    dom_->wait(mon, peer_, [&] {
      if (!failed_.empty()) mon.check(peer_);
      return s.done;
    });
  reap(s);
  if (s.status != UCS_OK && failed_.empty())
    lose(fmt::format("sending to rank {} failed: {}", peer_, ucs_status_string(s.status)));
  if (!failed_.empty()) mon.check(peer_);
  return out_.buf(out_seq_) + sizeof(MsgHeader);
}

void UcxLink::send_commit(size_t bytes, uint64_t tag) {
  std::lock_guard<std::recursive_mutex> lock(dom_->mutex());
  std::byte* b = out_.buf(out_seq_);
  MsgHeader h{tag, bytes};
  std::memcpy(b, &h, sizeof h);
  Slot& s = out_.slot(out_seq_);
  ++out_seq_;
  if (!failed_.empty()) return;  // the next wait reports it
  s.done = false;
  s.status = UCS_INPROGRESS;
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  p.cb.send = on_send;
  p.user_data = &s;
  // Synchronous: the send completes once the peer matched it to a posted receive, so a staging
  // slot frees only when the peer has room, and unexpected messages cannot pile up there.
  ucs_status_ptr_t r = ucp_tag_send_sync_nbx(ep_, b, sizeof h + bytes, ucp_tag(TagKind::Data, me_), &p);
  if (UCS_PTR_IS_ERR(r)) {
    s.done = true;
    lose(fmt::format("sending to rank {} failed: {}", peer_, ucs_status_string(UCS_PTR_STATUS(r))));
    return;
  }
  s.request = r;
}

Message UcxLink::recv_peek(WaitMonitor& mon, bool) {
  Slot& s = in_.slot(in_seq_);
  if (!s.done)
    dom_->wait(mon, peer_, [&] {
      if (s.done) return true;
      if (!failed_.empty()) mon.check(peer_);
      return false;
    });
  if (s.status != UCS_OK) {
    // Reported like any lost connection: the monitor names every rank gone with it.
    lose(fmt::format("receiving from rank {} failed: {}", peer_, ucs_status_string(s.status)));
    mon.check(peer_);
    fail(coralRemoteError, "ucx: " + failed_);
  }
  MsgHeader h;
  std::memcpy(&h, in_.buf(in_seq_), sizeof h);
  if (s.length < sizeof h || h.bytes != s.length - sizeof h)
    fail(coralRemoteError,
         fmt::format("ucx: rank {} sent a malformed message ({} bytes, header says {})", peer_, s.length, h.bytes));
  return Message{in_.buf(in_seq_) + sizeof h, h.bytes, h.tag};
}

// send_acquire and recv_peek wait for their slot's completion (an error completes it too). The
// abort test stands in for the monitor's check, through which an aborted wait ends.
bool UcxLink::probe(const Slot& s) {
  std::lock_guard<std::recursive_mutex> lock(dom_->mutex());
  auto done = [&] { return s.done || !failed_.empty() || dom_->aborted(); };
  if (done()) return true;
  dom_->progress();  // the completions come only from driving the worker
  return done();
}

bool UcxLink::send_ready(size_t bytes) {
  if (bytes > slot_bytes_) return true;  // send_acquire reports that at once
  return probe(out_.slot(out_seq_));
}

bool UcxLink::recv_ready() { return probe(in_.slot(in_seq_)); }

void UcxLink::recv_read(const Message& m, void* dst) {
  if (m.bytes) std::memcpy(dst, m.data, m.bytes);
}

void UcxLink::recv_release() {
  std::lock_guard<std::recursive_mutex> lock(dom_->mutex());
  reap(in_.slot(in_seq_));
  // Posted after the ones already waiting, so UCP keeps matching in order.
  post_receive(in_seq_ + in_.n());
  ++in_seq_;
}

}  // namespace coral::transport::ucx
