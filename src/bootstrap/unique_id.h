// What a coralUniqueId carries: the store's address and the job secret. Its bytes come from the
// user (copied between processes by MPI, a file, a socket), so decoding checks every field.
#pragma once
#include <coral/coral.h>

#include <string>

#include "bootstrap/wire.h"

namespace coral::bootstrap {

struct UniqueId {
  std::string addr;  // host:port or [ipv6]:port of the store
  wire::Secret secret{};
  // Made from an address alone (coralGetUniqueIdAt): rank 0 of each communicator created from it
  // serves a meeting there while its ranks arrive (meet_at.h); the secret comes from the port.
  bool rank0_serves = false;
};

constexpr size_t kMaxIdAddr = 71;  // characters of addr (72 bytes with its NUL)

// Throws coralInvalidArgument when addr is longer than kMaxIdAddr or not host:port.
void encode_unique_id(const UniqueId& id, char (&out)[CORAL_UNIQUE_ID_BYTES]);
// Throws coralInvalidArgument, saying what is wrong, unless `in` was made by encode_unique_id:
// magic, a NUL-terminated address of the form host:port (checked without a name lookup).
UniqueId decode_unique_id(const char (&in)[CORAL_UNIQUE_ID_BYTES]);

}  // namespace coral::bootstrap
