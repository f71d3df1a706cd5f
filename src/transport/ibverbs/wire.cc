#include "transport/ibverbs/wire.h"

#include <fmt/format.h>

#include <cstring>

#include "base/error.h"

namespace coral::transport::ibverbs {

namespace {

// The record behind a magic and a version; both ends run the same layout (same struct, same ABI).
struct Packed {
  uint32_t magic;
  uint16_t version;
  uint16_t pad;
  QpInfo info;
};

}  // namespace

std::vector<uint8_t> encode(const QpInfo& q) {
  Packed p{kQpInfoMagic, kQpInfoVersion, 0, q};
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
  const QpInfo& q = p.info;
  if (q.mtu < 1 || q.mtu > 5) bad(fmt::format("path MTU code {} (1-5)", q.mtu));
  if (q.qpn == 0 || q.qpn > 0xffffff) bad(fmt::format("queue pair number {}", q.qpn));
  if (q.psn > 0xffffff) bad(fmt::format("PSN {} exceeds 24 bits", q.psn));
  if (q.nslots < 2 || q.nslots > 1024) bad(fmt::format("{} slots", q.nslots));
  if (q.slot_bytes < 4096 || q.slot_bytes % 64) bad(fmt::format("slots of {} bytes", q.slot_bytes));
  if (!q.ring_addr || !q.credit_addr || !q.ctrl_addr) bad("a null remote address");
  return q;
}

}  // namespace coral::transport::ibverbs
