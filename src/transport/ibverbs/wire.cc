#include "transport/ibverbs/wire.h"

#include <fmt/format.h>

#include <cstring>

#include "base/error.h"
#include "bootstrap/exchange.h"

namespace coral::transport::ibverbs {

std::vector<uint8_t> encode(const QpInfo& q) {
  bootstrap::Record r("ibverbs: queue pair record", -1);
  r.add("version", static_cast<int>(kQpInfoVersion));
  r.add("lid", static_cast<int>(q.lid)).add("gid", q.gid, sizeof q.gid).add("port", static_cast<int>(q.port));
  r.add("mtu", static_cast<int>(q.mtu))
      .add("qpn", static_cast<uint64_t>(q.qpn))
      .add("psn", static_cast<uint64_t>(q.psn));
  r.add("ring_addr", q.ring_addr).add("ring_rkey", static_cast<uint64_t>(q.ring_rkey));
  r.add("credit_addr", q.credit_addr).add("credit_rkey", static_cast<uint64_t>(q.credit_rkey));
  r.add("ctrl_addr", q.ctrl_addr).add("ctrl_rkey", static_cast<uint64_t>(q.ctrl_rkey));
  r.add("nslots", static_cast<uint64_t>(q.nslots)).add("slot_bytes", static_cast<uint64_t>(q.slot_bytes));
  return r.encode();
}

QpInfo decode(const std::vector<uint8_t>& bytes, int from) {
  const bootstrap::Record r = bootstrap::Record::decode(bytes, "ibverbs: queue pair record", from);
  if (const int64_t v = r.number("version"); v != kQpInfoVersion)
    r.bad(fmt::format("version {}, this rank speaks {}", v, kQpInfoVersion));
  QpInfo q;
  q.lid = static_cast<uint16_t>(r.unsigned_number("lid", UINT16_MAX));
  r.bytes("gid", q.gid, sizeof q.gid);
  q.port = static_cast<uint8_t>(r.unsigned_number("port", UINT8_MAX));
  const uint64_t mtu = r.unsigned_number("mtu");
  const uint64_t qpn = r.unsigned_number("qpn"), psn = r.unsigned_number("psn");
  q.ring_addr = r.unsigned_number("ring_addr");
  q.ring_rkey = static_cast<uint32_t>(r.unsigned_number("ring_rkey", UINT32_MAX));
  q.credit_addr = r.unsigned_number("credit_addr");
  q.credit_rkey = static_cast<uint32_t>(r.unsigned_number("credit_rkey", UINT32_MAX));
  q.ctrl_addr = r.unsigned_number("ctrl_addr");
  q.ctrl_rkey = static_cast<uint32_t>(r.unsigned_number("ctrl_rkey", UINT32_MAX));
  const uint64_t nslots = r.unsigned_number("nslots"), slot_bytes = r.unsigned_number("slot_bytes");
  if (mtu < 1 || mtu > 5) r.bad(fmt::format("path MTU code {} (1-5)", mtu));
  if (qpn == 0 || qpn > 0xffffff) r.bad(fmt::format("queue pair number {}", qpn));
  if (psn > 0xffffff) r.bad(fmt::format("PSN {} exceeds 24 bits", psn));
  if (nslots < 2 || nslots > 1024) r.bad(fmt::format("{} slots", nslots));
  if (slot_bytes < 4096 || slot_bytes % 64 || slot_bytes > UINT32_MAX)
    r.bad(fmt::format("slots of {} bytes", slot_bytes));
  if (!q.ring_addr || !q.credit_addr || !q.ctrl_addr) r.bad("a null remote address");
  q.mtu = static_cast<uint8_t>(mtu);
  q.qpn = static_cast<uint32_t>(qpn);
  q.psn = static_cast<uint32_t>(psn);
  q.nslots = static_cast<uint32_t>(nslots);
  q.slot_bytes = static_cast<uint32_t>(slot_bytes);
  return q;
}

}  // namespace coral::transport::ibverbs
