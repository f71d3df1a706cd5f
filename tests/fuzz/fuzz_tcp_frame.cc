// Fuzz target for what a TCP link reads from a peer's socket: the hello, then frame headers. The
// input picks this side's geometry (within the ranges CORAL_SOCKET_* allow), a hello and a run
// of frames; whatever check_hello and check_frame accept must be safe to act on: a data frame's
// part lies inside its message, its message fits the slot and its sequence number is in the
// window. A violation traps (libFuzzer reports it); a refusal is fine.
#include <cstdint>
#include <cstring>
#include <vector>

#include "transport/tcp/wire.h"

using namespace coral::transport::tcp;

namespace {

struct Input {
  const uint8_t* p;
  size_t n;
  template <class T>
  T take() {
    T v{};
    const size_t k = n < sizeof v ? n : sizeof v;
    std::memcpy(&v, p, k);
    p += k;
    n -= k;
    return v;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in{data, size};
  Geometry g;
  g.slot_bytes = 4096u << (in.take<uint8_t>() % 12);  // 4 KiB .. 8 MiB
  g.nslots = 2 + in.take<uint8_t>() % 63;
  g.nsocks = 1 + in.take<uint8_t>() % kMaxSockets;
  const int nranks = 2 + in.take<uint8_t>() % 14, me = 1 + in.take<uint8_t>() % (nranks - 1);
  uint8_t token[coral::bootstrap::wire::kSecretBytes];
  std::memset(token, 0x5a, sizeof token);
  Hello h = in.take<Hello>();
  // Half the inputs carry the right token, so the checks behind it are reached.
  if (in.take<uint8_t>() & 1) std::memcpy(h.token, token, sizeof token);
  if (!check_hello(h, me, nranks, g, token).empty()) return 0;
  if (h.from < 0 || h.from >= me || h.to != me || h.sock >= h.nsocks || h.nsocks != g.nsocks) __builtin_trap();
  const int sock = h.sock;
  uint64_t released = 0;
  uint32_t credits = in.take<uint8_t>() % (g.nslots + 1);
  while (in.n >= sizeof(Frame)) {
    Frame f = in.take<Frame>();
    if (!check_frame(f, sock, g, released, credits).empty()) return 0;
    if (uint64_t{f.credits} + credits > g.nslots) __builtin_trap();
    credits += f.credits;
    if (static_cast<Kind>(f.kind) == Kind::Data) {
      if (f.total > g.slot_bytes || f.part >= f.nparts) __builtin_trap();
      const Part part = part_of(f.total, f.nparts, f.part);
      if (part.off + part.bytes > f.total || part.bytes != f.bytes) __builtin_trap();
      if (f.seq < released || f.seq >= released + g.nslots) __builtin_trap();
      released += in.take<uint8_t>() & 1;  // the receiver releases a slot now and then
    } else if (static_cast<Kind>(f.kind) == Kind::Abort) {
      if (f.bytes > kMaxAbortText) __builtin_trap();
    } else if (f.bytes != 0) {
      __builtin_trap();
    }
    credits -= credits ? in.take<uint8_t>() % (credits + 1) : 0;  // sends spend credits
  }
  return 0;
}
