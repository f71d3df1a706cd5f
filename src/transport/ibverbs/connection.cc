#include "transport/ibverbs/connection.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <cstring>

#include "base/error.h"
#include "transport/ibverbs/domain.h"

namespace coral::transport::ibverbs {

namespace {

Region make_region(ibv_pd* pd, size_t bytes, int access) {
  Region r;
  r.mem.reset(new std::byte[bytes]());
  r.mr = ibv_reg_mr(pd, r.mem.get(), bytes, access);
  if (!r.mr) fail_errno("ibverbs: ibv_reg_mr", errno);
  return r;
}

uint64_t wr_id(Wr kind, int peer, uint64_t n) {
  return (static_cast<uint64_t>(kind) << 56) | (static_cast<uint64_t>(peer & 0xffffff) << 32) | (n & 0xffffffff);
}

}  // namespace

IbvLink::IbvLink(IbvDomain* dom, int me, int peer, uint32_t slot_bytes, uint32_t nslots, size_t direct_min)
    : dom_(dom),
      me_(me),
      peer_(peer),
      slot_bytes_(slot_bytes),
      nslots_(nslots),
      stride_(sizeof(MsgHeader) + slot_bytes),
      direct_min_(direct_min) {}

IbvLink::~IbvLink() {
  if (qp_) ibv_destroy_qp(qp_);
}

QpInfo IbvLink::local_info(ibv_pd* pd, ibv_cq* scq, ibv_cq* rcq, const QpConfig& cfg, uint8_t mtu, uint16_t lid,
                           const ibv_gid& gid, uint64_t ctrl_addr, uint32_t ctrl_rkey) {
  const int remote = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  in_ = make_region(pd, stride_ * nslots_, remote);
  out_ = make_region(pd, stride_ * nslots_, IBV_ACCESS_LOCAL_WRITE);
  credit_in_ = make_region(pd, sizeof(uint64_t), remote);
  credit_out_ = make_region(pd, sizeof(uint64_t), IBV_ACCESS_LOCAL_WRITE);
  ibv_qp_init_attr ia{};
  ia.send_cq = scq;
  ia.recv_cq = rcq;
  ia.qp_type = IBV_QPT_RC;
  // Data writes, direct writes (two each), credit and control writes.
  ia.cap.max_send_wr = 4 * nslots_ + 16;
  ia.cap.max_recv_wr = nslots_;
  ia.cap.max_send_sge = 1;
  ia.cap.max_recv_sge = 1;
  ia.cap.max_inline_data = sizeof(MsgHeader);
  qp_ = ibv_create_qp(pd, &ia);
  if (!qp_) fail_errno(fmt::format("ibverbs: ibv_create_qp for rank {}", peer_), errno);
  Step s = machine_.step(QpState::Init, cfg, mine_, remote_);
  if (int e = ibv_modify_qp(qp_, &s.attr, s.mask)) fail_errno("ibverbs: queue pair to INIT", e);
  machine_.advance(QpState::Init);
  mine_.lid = lid;
  std::memcpy(mine_.gid, gid.raw, 16);
  mine_.port = cfg.port;
  mine_.mtu = mtu;
  mine_.qpn = qp_->qp_num;
  mine_.psn = static_cast<uint32_t>((static_cast<uint64_t>(me_) * 2654435761u + peer_) & 0xffffff);
  mine_.ring_addr = reinterpret_cast<uint64_t>(in_.mem.get());
  mine_.ring_rkey = in_.mr->rkey;
  mine_.credit_addr = reinterpret_cast<uint64_t>(credit_in_.mem.get());
  mine_.credit_rkey = credit_in_.mr->rkey;
  mine_.ctrl_addr = ctrl_addr;
  mine_.ctrl_rkey = ctrl_rkey;
  mine_.nslots = nslots_;
  mine_.slot_bytes = slot_bytes_;
  // Receives must be posted before the peer can write with immediate data.
  for (uint32_t i = 0; i < nslots_; ++i) post_recv();
  return mine_;
}

void IbvLink::connect(const QpConfig& cfg, const QpInfo& peer) {
  if (peer.nslots != nslots_ || peer.slot_bytes != slot_bytes_)
    fail(coralInvalidUsage, fmt::format("ibverbs: rank {} uses {} slots of {} bytes, rank {} {} of {}: set "
                                        "CORAL_IB_NSLOTS and CORAL_IB_SLOT_BYTES alike",
                                        peer_, peer.nslots, peer.slot_bytes, me_, nslots_, slot_bytes_));
  remote_ = peer;
  for (QpState to : {QpState::Rtr, QpState::Rts}) {
    Step s = machine_.step(to, cfg, mine_, remote_);
    if (int e = ibv_modify_qp(qp_, &s.attr, s.mask))
      fail_errno(fmt::format("ibverbs: queue pair to rank {} to {}", peer_, state_name(to)), e);
    machine_.advance(to);
  }
}

void IbvLink::post_recv() {
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  wr.wr_id = static_cast<uint64_t>(peer_);
  wr.num_sge = 0;  // writes with immediate consume a receive but carry no receive payload
  if (int e = ibv_post_recv(qp_, &wr, &bad))
    lose(fmt::format("posting a receive for rank {}: {}", peer_, std::strerror(e)));
}

void IbvLink::post_write(Wr kind, const void* local, uint32_t lkey, size_t len, uint64_t raddr, uint32_t rkey,
                         bool with_imm, uint32_t imm) {
  ibv_sge sge{reinterpret_cast<uint64_t>(local), static_cast<uint32_t>(len), lkey};
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = wr_id(kind, peer_, kind == Wr::Data ? out_seq_ : 0);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = with_imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED | (len <= sizeof(MsgHeader) ? IBV_SEND_INLINE : 0);
  wr.imm_data = htonl(imm);
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  if (int e = ibv_post_send(qp_, &wr, &bad))
    lose(fmt::format("posting a write to rank {}: {}", peer_, std::strerror(e)));
}

bool IbvLink::send_room() const {
  // The peer RDMA-writes its released count here.
  const auto* released = reinterpret_cast<const volatile uint64_t*>(credit_in_.mem.get());
  return out_seq_ - *released < nslots_ && out_seq_ - sends_done_ < nslots_;
}

std::byte* IbvLink::send_acquire(size_t bytes, WaitMonitor& mon) {
  if (bytes > slot_bytes_) fail(coralInternalError, "ibverbs: message larger than a slot");
  dom_->wait(mon, peer_, [&] {
    if (!failed_.empty()) mon.check(peer_);
    return send_room();
  });
  return out_.mem.get() + (out_seq_ % nslots_) * stride_ + sizeof(MsgHeader);
}

void IbvLink::send_commit(size_t bytes, uint64_t tag) {
  std::lock_guard<std::recursive_mutex> lock(dom_->mutex());
  std::byte* slot = out_.mem.get() + (out_seq_ % nslots_) * stride_;
  MsgHeader h{tag, bytes};
  std::memcpy(slot, &h, sizeof h);
  post_write(Wr::Data, slot, out_.mr->lkey, sizeof h + bytes, remote_.ring_addr + (out_seq_ % nslots_) * stride_,
             remote_.ring_rkey, true, static_cast<uint32_t>(out_seq_));
  ++out_seq_;
}

void IbvLink::send_direct(const void* src, size_t bytes, uint64_t tag, WaitMonitor& mon) {
  send_acquire(bytes, mon);
  std::lock_guard<std::recursive_mutex> lock(dom_->mutex());
  const Registration& r = dom_->cache().acquire(src, bytes);
  const uint64_t raddr = remote_.ring_addr + (out_seq_ % nslots_) * stride_;
  // The payload from the user's buffer, then the header with the immediate: one queue pair
  // executes writes in order, so the peer sees the completion only after the payload landed.
  post_write(Wr::Direct, src, r.lkey, bytes, raddr + sizeof(MsgHeader), remote_.ring_rkey, false, 0);
  dom_->cache().release(r);  // stays registered (cached); pinned again if reused while in flight
  ++direct_posted_;
  std::byte* slot = out_.mem.get() + (out_seq_ % nslots_) * stride_;
  MsgHeader h{tag, bytes};
  std::memcpy(slot, &h, sizeof h);
  post_write(Wr::Data, slot, out_.mr->lkey, sizeof h, raddr, remote_.ring_rkey, true, static_cast<uint32_t>(out_seq_));
  ++out_seq_;
}

void IbvLink::flush(WaitMonitor& mon) {
  dom_->wait(mon, peer_, [&] {
    if (!failed_.empty()) mon.check(peer_);
    return direct_done_ == direct_posted_;
  });
}

Message IbvLink::recv_peek(WaitMonitor& mon, bool) {
  dom_->wait(mon, peer_, [&] {
    if (arrived_ > in_seq_) return true;
    if (!failed_.empty()) mon.check(peer_);
    return false;
  });
  std::byte* slot = in_.mem.get() + (in_seq_ % nslots_) * stride_;
  MsgHeader h;
  std::memcpy(&h, slot, sizeof h);
  if (h.bytes > slot_bytes_)
    fail(coralRemoteError,
         fmt::format("ibverbs: rank {} wrote a {}-byte message into a {}-byte slot", peer_, h.bytes, slot_bytes_));
  return Message{slot + sizeof h, h.bytes, h.tag};
}

// The abort test stands in for the monitor's check, through which an aborted wait ends.
template <class Ready>
bool IbvLink::probe(Ready ready) {
  std::lock_guard<std::recursive_mutex> lock(dom_->mutex());
  auto done = [&] { return ready() || !failed_.empty() || dom_->aborted(); };
  if (done()) return true;
  dom_->progress();  // completions (sends done, messages in) come only from polling the queues
  return done();
}

bool IbvLink::send_ready(size_t bytes) {
  if (bytes > slot_bytes_) return true;  // send_acquire reports that at once
  return probe([&] { return send_room(); });
}

bool IbvLink::recv_ready() {
  return probe([&] { return arrived_ > in_seq_; });
}

void IbvLink::recv_read(const Message& m, void* dst) {
  if (m.bytes) std::memcpy(dst, m.data, m.bytes);
}

void IbvLink::recv_release() {
  ++in_seq_;
  // Reported once half the window is free, as the TCP transport does (max_in_flight accounts for it).
  if ((in_seq_ - reported_) * 2 >= nslots_) {
    std::lock_guard<std::recursive_mutex> lock(dom_->mutex());
    report_credits();
  }
}

void IbvLink::report_credits() {
  *reinterpret_cast<uint64_t*>(credit_out_.mem.get()) = in_seq_;
  post_write(Wr::Credit, credit_out_.mem.get(), credit_out_.mr->lkey, sizeof(uint64_t), remote_.credit_addr,
             remote_.credit_rkey, false, 0);
  reported_ = in_seq_;
}

void IbvLink::on_recv(const ibv_wc& wc) {
  if (wc.status != IBV_WC_SUCCESS) {
    lose(fmt::format("connection to rank {} failed: {}", peer_, ibv_wc_status_str(wc.status)));
    return;
  }
  if (ntohl(wc.imm_data) != static_cast<uint32_t>(arrived_)) {
    lose(fmt::format("rank {} sent message {} where {} was next", peer_, ntohl(wc.imm_data), arrived_));
    return;
  }
  ++arrived_;
  post_recv();
}

void IbvLink::on_send(const ibv_wc& wc) {
  if (wc.status != IBV_WC_SUCCESS) {
    lose(fmt::format("connection to rank {} failed: {}", peer_, ibv_wc_status_str(wc.status)));
    return;
  }
  switch (static_cast<Wr>(wc.wr_id >> 56)) {
    case Wr::Data:
      ++sends_done_;
      break;
    case Wr::Direct:
      ++direct_done_;
      break;
    default:
      break;
  }
}

}  // namespace coral::transport::ibverbs
