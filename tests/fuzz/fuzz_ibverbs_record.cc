// Fuzz target for the ibverbs connection record a peer publishes through the store: any bytes
// either decode or throw coral::Error naming the field; what decodes must encode back to a
// record that decodes to the same fields, and stay within the ranges the queue pair setup uses.
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "transport/ibverbs/wire.h"

using namespace coral::transport::ibverbs;

namespace {

bool same(const QpInfo& a, const QpInfo& b) {
  return a.lid == b.lid && std::memcmp(a.gid, b.gid, sizeof a.gid) == 0 && a.port == b.port && a.mtu == b.mtu &&
         a.qpn == b.qpn && a.psn == b.psn && a.ring_addr == b.ring_addr && a.ring_rkey == b.ring_rkey &&
         a.credit_addr == b.credit_addr && a.credit_rkey == b.credit_rkey && a.ctrl_addr == b.ctrl_addr &&
         a.ctrl_rkey == b.ctrl_rkey && a.nslots == b.nslots && a.slot_bytes == b.slot_bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  QpInfo q;
  try {
    q = decode(bytes, 3);
  } catch (const coral::Error&) {
    return 0;
  }
  if (q.qpn >= (1u << 24) || q.psn >= (1u << 24)) __builtin_trap();
  if (q.mtu < 1 || q.mtu > 5) __builtin_trap();
  QpInfo again;
  try {
    again = decode(encode(q), 3);
  } catch (const coral::Error&) {
    __builtin_trap();
  }
  if (!same(q, again)) __builtin_trap();
  return 0;
}
