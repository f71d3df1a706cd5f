#include "transport/ibverbs/wire.h"

#include <fmt/format.h>

#include <cstring>

#include "core/error.h"

namespace coral::transport::ibverbs {

namespace {

struct Packed {
  uint32_t magic;
  uint16_t version;
  uint16_t lid;
  uint8_t gid[16];
  uint8_t port, mtu, pad[2];
  uint32_t qpn, psn;
  uint64_t ring_addr;
  uint32_t ring_rkey, credit_rkey;
  uint64_t credit_addr;
  uint64_t ctrl_addr;
  uint32_t ctrl_rkey, nslots, slot_bytes, pad2;
};
static_assert(sizeof(Packed) == 88);

}  // namespace

std::vector<uint8_t> encode(const QpInfo& q) {
  Packed p{kQpInfoMagic, kQpInfoVersion, q.lid, {}, q.port, q.mtu, {}, q.qpn, q.psn, q.ring_addr, q.ring_rkey,
           q.credit_rkey, q.credit_addr, q.ctrl_addr, q.ctrl_rkey, q.nslots, q.slot_bytes, 0};
  std::memcpy(p.gid, q.gid, sizeof p.gid);
  std::vector<uint8_t> out(sizeof p);
  std::memcpy(out.data(), &p, sizeof p);
  return out;
}

QpInfo decode(const std::vector<uint8_t>& bytes, int from) {
  auto bad = [&](const std::string& why) {
    fail(coralRemoteError, fmt::format("ibverbs: queue pair record of rank {}: {}", from, why));
  };
  if (bytes.size() != sizeof(Packed)) bad(fmt::format("{} bytes, expected {}", bytes.size(), sizeof(Packed)));
  Packed p;
  std::memcpy(&p, bytes.data(), sizeof p);
  if (p.magic != kQpInfoMagic) bad("bad magic");
  if (p.version != kQpInfoVersion) bad(fmt::format("version {}, this rank speaks {}", p.version, kQpInfoVersion));
  if (p.mtu < 1 || p.mtu > 5) bad(fmt::format("path MTU code {} (1-5)", p.mtu));
  if (p.qpn == 0 || p.qpn > 0xffffff) bad(fmt::format("queue pair number {}", p.qpn));
  if (p.psn > 0xffffff) bad(fmt::format("PSN {} exceeds 24 bits", p.psn));
  if (p.nslots < 2 || p.nslots > 1024) bad(fmt::format("{} slots", p.nslots));
  if (p.slot_bytes < 4096 || p.slot_bytes % 64) bad(fmt::format("slots of {} bytes", p.slot_bytes));
  if (!p.ring_addr || !p.credit_addr || !p.ctrl_addr) bad("a null remote address");
  QpInfo q;
  q.lid = p.lid;
  std::memcpy(q.gid, p.gid, sizeof q.gid);
  q.port = p.port;
  q.mtu = p.mtu;
  q.qpn = p.qpn;
  q.psn = p.psn;
  q.ring_addr = p.ring_addr;
  q.ring_rkey = p.ring_rkey;
  q.credit_addr = p.credit_addr;
  q.credit_rkey = p.credit_rkey;
  q.ctrl_addr = p.ctrl_addr;
  q.ctrl_rkey = p.ctrl_rkey;
  q.nslots = p.nslots;
  q.slot_bytes = p.slot_bytes;
  return q;
}

}  // namespace coral::transport::ibverbs
