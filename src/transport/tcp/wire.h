// What crosses a TCP link: a hello per socket at connect, then frames. Every field read from the
// wire is checked here before anything is allocated or written, so a stray or hostile peer gets
// a clear error instead of corrupting memory.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "bootstrap/wire.h"

namespace coral::transport::tcp {

constexpr uint32_t kHelloMagic = 0x4c484343;  // "CCHL"
constexpr uint32_t kFrameMagic = 0x46544343;  // "CCTF"
constexpr uint16_t kVersion = 1;
constexpr int kMaxSockets = 16;
constexpr uint32_t kMaxAbortText = 1024;
// Messages smaller than this per socket are not striped: each extra part costs a header and a syscall.
constexpr size_t kMinStripe = 64 * 1024;

// Sent once by the connecting side on each of its sockets to a peer.
struct Hello {
  uint32_t magic;
  uint16_t version;
  uint16_t sock;    // index of this socket within the pair
  uint16_t nsocks;  // sockets per pair the connector uses
  uint16_t pad;
  int32_t from;  // connector's rank
  int32_t to;    // rank the connector believes it reached
  uint32_t slot_bytes;
  uint32_t nslots;
  uint8_t token[bootstrap::wire::kSecretBytes];  // the acceptor's per-job token, learnt through the store
};
static_assert(sizeof(Hello) == 60);

enum class Kind : uint8_t { Data = 1, Credit = 2, Abort = 3, Bye = 4 };

struct Frame {
  uint32_t magic;
  uint8_t kind;
  uint8_t part;      // Data: which stripe of the message this socket carries
  uint16_t nparts;   // Data: stripes the message was cut into
  uint32_t bytes;    // payload bytes that follow this header
  uint32_t total;    // Data: bytes of the whole message
  uint32_t credits;  // receive slots the sender of this frame freed since it last said so
  uint32_t pad;
  uint64_t seq;  // Data: message number on this link
  uint64_t tag;  // Data: the operation's tag
};
static_assert(sizeof(Frame) == 40);

// What this side expects of a peer's frames.
struct Geometry {
  uint32_t slot_bytes;
  uint32_t nslots;
  int nsocks;
};

// How a message of `total` bytes is cut over nsocks sockets: part i goes on socket i.
int nparts_for(size_t total, int nsocks);
struct Part {
  size_t off, bytes;
};
Part part_of(size_t total, int nparts, int i);

// "" when acceptable, else why not. expect_token is this rank's token.
std::string check_hello(const Hello& h, int my_rank, int nranks, const Geometry& g, const uint8_t* expect_token);
// Checks a frame header received on socket `sock`. released: messages the receiver has released
// on this link; credits_now: send credits this side already holds.
std::string check_frame(const Frame& f, int sock, const Geometry& g, uint64_t released, uint32_t credits_now);

}  // namespace coral::transport::tcp
