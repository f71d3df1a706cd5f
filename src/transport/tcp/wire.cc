#include "transport/tcp/wire.h"

#include <fmt/format.h>

namespace coral::transport::tcp {

int nparts_for(size_t total, int nsocks) {
  size_t n = total / kMinStripe;
  if (n < 1) n = 1;
  return static_cast<int>(n < static_cast<size_t>(nsocks) ? n : static_cast<size_t>(nsocks));
}

Part part_of(size_t total, int nparts, int i) {
  // Stripes are multiples of 64 bytes (whole cache lines) except the last.
  size_t per = (total / nparts + 63) & ~size_t{63};
  size_t off = per * static_cast<size_t>(i);
  if (off > total) off = total;
  size_t end = i == nparts - 1 ? total : std::min(total, off + per);
  return {off, end - off};
}

std::string check_hello(const Hello& h, int my_rank, int nranks, const Geometry& g, const uint8_t* expect_token) {
  if (h.magic != kHelloMagic) return "not a Coral connection (bad magic)";
  if (h.version != kVersion) return fmt::format("protocol version {} (this rank speaks {})", h.version, kVersion);
  if (!bootstrap::wire::secrets_equal(h.token, expect_token)) return "wrong job secret";
  if (h.from < 0 || h.from >= nranks) return fmt::format("claims rank {} of a {}-rank job", h.from, nranks);
  if (h.from >= my_rank) return fmt::format("rank {} should not connect to rank {}", h.from, my_rank);
  if (h.to != my_rank) return fmt::format("meant for rank {}, reached rank {}", h.to, my_rank);
  if (h.nsocks != g.nsocks)
    return fmt::format("rank {} uses {} sockets per peer, this rank {} (set CORAL_SOCKET_NSOCKS alike)", h.from,
                       h.nsocks, g.nsocks);
  if (h.sock >= h.nsocks) return fmt::format("socket index {} of {}", h.sock, h.nsocks);
  if (h.slot_bytes != g.slot_bytes || h.nslots != g.nslots)
    return fmt::format(
        "rank {} uses {} slots of {} bytes, this rank {} of {} (set CORAL_SOCKET_SLOT_BYTES and "
        "CORAL_SOCKET_NSLOTS alike)",
        h.from, h.nslots, h.slot_bytes, g.nslots, g.slot_bytes);
  return "";
}

std::string check_frame(const Frame& f, int sock, const Geometry& g, uint64_t released, uint32_t credits_now) {
  if (f.magic != kFrameMagic) return "bad frame magic (stream out of step)";
  if (uint64_t{f.credits} + credits_now > g.nslots)
    return fmt::format("{} credits returned on top of {} held, more than {} slots", f.credits, credits_now, g.nslots);
  switch (static_cast<Kind>(f.kind)) {
    case Kind::Data: {
      if (f.total > g.slot_bytes)
        return fmt::format("message of {} bytes exceeds the {}-byte slot", f.total, g.slot_bytes);
      int n = nparts_for(f.total, g.nsocks);
      if (f.nparts != n || f.part != sock)
        return fmt::format("part {}/{} on socket {}; a {}-byte message is cut into {}", f.part, f.nparts, sock, f.total,
                           n);
      if (f.bytes != part_of(f.total, n, sock).bytes)
        return fmt::format("part of {} bytes, expected {}", f.bytes, part_of(f.total, n, sock).bytes);
      if (f.seq < released || f.seq >= released + g.nslots)
        return fmt::format("message {} outside the window [{}, {})", f.seq, released, released + g.nslots);
      return "";
    }
    case Kind::Credit:
    case Kind::Bye:
      return f.bytes == 0 ? "" : "control frame with a payload";
    case Kind::Abort:
      return f.bytes <= kMaxAbortText ? "" : "abort text too long";
  }
  return fmt::format("unknown frame kind {}", f.kind);
}

}  // namespace coral::transport::tcp
