// The RDMA verbs transport without a device: the exchange record, the queue pair state machine,
// the registration cache, and the no-device path.
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <cstring>
#include <map>

#include "base/error.h"
#include "transport/ibverbs/memory.h"
#include "transport/ibverbs/qp.h"
#include "transport/ibverbs/transport.h"
#include "transport/ibverbs/wire.h"

using namespace coral;
using namespace coral::transport::ibverbs;

namespace {

QpInfo sample() {
  QpInfo q;
  q.lid = 7;
  for (int i = 0; i < 16; ++i) q.gid[i] = static_cast<uint8_t>(i * 17);
  q.port = 1;
  q.mtu = IBV_MTU_4096;
  q.qpn = 0x1234;
  q.psn = 0xabcdef;
  q.ring_addr = 0x7f0000001000;
  q.ring_rkey = 11;
  q.credit_addr = 0x7f0000002000;
  q.credit_rkey = 12;
  q.ctrl_addr = 0x7f0000003000;
  q.ctrl_rkey = 13;
  q.nslots = 8;
  q.slot_bytes = 256 * 1024;
  return q;
}

// Records calls; hands out increasing keys.
class FakeRegistrar : public Registrar {
 public:
  Registration reg(uintptr_t addr, size_t len) override {
    ++regs;
    live[addr] = len;
    return {addr, len, next, next + 1000, reinterpret_cast<void*>(next++)};
  }
  void dereg(const Registration& r) override {
    ++deregs;
    live.erase(r.addr);
  }
  int regs = 0, deregs = 0;
  uint32_t next = 1;
  std::map<uintptr_t, size_t> live;
};

}  // namespace

TEST_CASE("queue pair records round-trip and every bad field is named") {
  QpInfo q = sample();
  QpInfo back = decode(encode(q), 3);
  CHECK(back.lid == q.lid);
  CHECK(std::memcmp(back.gid, q.gid, 16) == 0);
  CHECK(back.qpn == q.qpn);
  CHECK(back.psn == q.psn);
  CHECK(back.ring_addr == q.ring_addr);
  CHECK(back.ring_rkey == q.ring_rkey);
  CHECK(back.credit_addr == q.credit_addr);
  CHECK(back.ctrl_rkey == q.ctrl_rkey);
  CHECK(back.nslots == q.nslots);
  CHECK(back.slot_bytes == q.slot_bytes);

  auto refused = [](std::vector<uint8_t> b) {
    try {
      decode(b, 5);
    } catch (const Error& e) {
      CHECK(e.code() == coralRemoteError);
      CHECK_THAT(e.what(), Catch::Contains("rank 5"));
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  std::vector<uint8_t> b = encode(q);
  CHECK_THAT(refused({b.begin(), b.end() - 1}), Catch::Contains("bytes"));
  auto with = [&](auto change) {
    QpInfo x = sample();
    change(x);
    return refused(encode(x));
  };
  CHECK_THAT(with([](QpInfo& x) { x.mtu = 9; }), Catch::Contains("MTU"));
  CHECK_THAT(with([](QpInfo& x) { x.qpn = 0; }), Catch::Contains("queue pair number"));
  CHECK_THAT(with([](QpInfo& x) { x.qpn = 1 << 24; }), Catch::Contains("queue pair number"));
  CHECK_THAT(with([](QpInfo& x) { x.psn = 1 << 24; }), Catch::Contains("PSN"));
  CHECK_THAT(with([](QpInfo& x) { x.nslots = 1; }), Catch::Contains("slots"));
  CHECK_THAT(with([](QpInfo& x) { x.slot_bytes = 1000; }), Catch::Contains("slots of"));
  CHECK_THAT(with([](QpInfo& x) { x.ring_addr = 0; }), Catch::Contains("null"));
  b[0] ^= 1;
  CHECK_THAT(refused(b), Catch::Contains("magic"));
}

TEST_CASE("queue pair state machine: RESET, INIT, RTR, RTS with the right attributes") {
  QpMachine m;
  QpConfig cfg;
  QpInfo mine = sample(), peer = sample();
  peer.qpn = 99;
  peer.psn = 42;
  peer.lid = 3;
  peer.mtu = IBV_MTU_1024;
  CHECK_THROWS_WITH(m.step(QpState::Rtr, cfg, mine, peer), Catch::Contains("from RESET to RTR"));
  CHECK_THROWS_WITH(m.step(QpState::Rts, cfg, mine, peer), Catch::Contains("from RESET to RTS"));
  Step init = m.step(QpState::Init, cfg, mine, peer);
  CHECK(init.attr.qp_state == IBV_QPS_INIT);
  CHECK(init.mask == (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
  CHECK((init.attr.qp_access_flags & IBV_ACCESS_REMOTE_WRITE) != 0);
  m.advance(QpState::Init);
  CHECK_THROWS_WITH(m.step(QpState::Rts, cfg, mine, peer), Catch::Contains("from INIT to RTS"));
  Step rtr = m.step(QpState::Rtr, cfg, mine, peer);
  CHECK(rtr.attr.dest_qp_num == 99);
  CHECK(rtr.attr.rq_psn == 42);
  CHECK(rtr.attr.ah_attr.dlid == 3);
  CHECK(rtr.attr.path_mtu == IBV_MTU_1024);  // the smaller of the two ends
  CHECK(rtr.attr.ah_attr.is_global == 0);
  CHECK((rtr.mask & IBV_QP_AV) != 0);
  CHECK((rtr.mask & IBV_QP_DEST_QPN) != 0);
  cfg.use_gid = true;
  cfg.gid_index = 3;
  Step rtr_roce = m.step(QpState::Rtr, cfg, mine, peer);
  CHECK(rtr_roce.attr.ah_attr.is_global == 1);
  CHECK(rtr_roce.attr.ah_attr.grh.sgid_index == 3);
  CHECK(std::memcmp(rtr_roce.attr.ah_attr.grh.dgid.raw, peer.gid, 16) == 0);
  m.advance(QpState::Rtr);
  Step rts = m.step(QpState::Rts, cfg, mine, peer);
  CHECK(rts.attr.sq_psn == mine.psn);
  CHECK(rts.mask == (IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                     IBV_QP_MAX_QP_RD_ATOMIC));
  m.advance(QpState::Rts);
  CHECK_THROWS(m.step(QpState::Init, cfg, mine, peer));
  CHECK(m.step(QpState::Error, cfg, mine, peer).attr.qp_state == IBV_QPS_ERR);
  m.advance(QpState::Error);
  CHECK(m.step(QpState::Reset, cfg, mine, peer).attr.qp_state == IBV_QPS_RESET);
}

TEST_CASE("registration cache: hits, page rounding, growth, LRU eviction, invalidation") {
  FakeRegistrar fr;
  RegCache c(fr, 64 * 1024);
  alignas(4096) static std::byte mem[256 * 1024];
  const Registration& a = c.acquire(mem + 100, 5000);
  CHECK(a.addr == reinterpret_cast<uintptr_t>(mem));
  CHECK(a.len == 8192);  // whole pages
  uint32_t key = a.lkey;
  c.release(a);
  const Registration& again = c.acquire(mem + 4000, 1000);  // inside: a hit
  CHECK(again.lkey == key);
  CHECK(c.hits() == 1);
  CHECK(c.misses() == 1);
  c.release(again);
  // A larger buffer at the same place absorbs the old entry.
  const Registration& big = c.acquire(mem, 16384);
  CHECK(big.len == 16384);
  CHECK(c.entries() == 1);
  CHECK(fr.deregs == 1);
  c.release(big);
  // Over capacity: the least recently used unused entries go; one in use stays.
  const Registration& held = c.acquire(mem + 65536, 32768);
  const Registration& r2 = c.acquire(mem + 131072, 32768);
  c.release(r2);
  CHECK(c.pinned_bytes() <= 64 * 1024 + 32768);
  CHECK(c.evictions() >= 1);
  CHECK(fr.live.count(reinterpret_cast<uintptr_t>(mem + 65536)) == 1);  // in use: kept
  CHECK_THROWS_WITH(c.invalidate(mem + 65536 + 10, 10), Catch::Contains("while an operation uses it"));
  c.release(held);
  c.invalidate(mem + 65536 + 10, 10);
  CHECK(fr.live.count(reinterpret_cast<uintptr_t>(mem + 65536)) == 0);
  int before = fr.regs;
  c.release(c.acquire(mem + 65536, 100));  // gone, so registered again
  CHECK(fr.regs == before + 1);
}

TEST_CASE("without an RDMA device the transport steps aside with a reason") {
  IbvTransport t;
  if (t.available()) {
    WARN("this host has an RDMA device: the no-device path is not exercised");
    return;
  }
  transport::PeerInfo a{0, 1, "h1"}, b{1, 2, "h2"};
  CHECK_FALSE(t.can_connect(a, b));
  transport::ConnectArgs args{nullptr, "x", nullptr, 0, {}, 1.0};
  CHECK_THROWS_WITH(t.connect(args), Catch::Contains("ibverbs:") && Catch::Contains("CORAL_TRANSPORT"));
}
