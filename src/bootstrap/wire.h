// Framing of the TCP store protocol. Every field read from the wire is validated against these
// limits before anything is allocated.
#pragma once
#include <array>
#include <cstdint>
#include <string>

namespace coral::bootstrap::wire {

constexpr uint32_t kMagic = 0x314c5243;  // "CRL1"
constexpr uint32_t kMaxKey = 4096;
constexpr uint32_t kMaxValue = 64u << 20;
constexpr size_t kSecretBytes = 32;

enum class Msg : uint8_t { Hello = 1, Set = 2, Get = 3, Add = 4, Ok = 0x80, Value = 0x81, Denied = 0x82 };

struct Header {
  uint32_t magic;
  uint8_t type;
  uint8_t pad[3];
  uint32_t key_len;
  uint32_t value_len;
};
static_assert(sizeof(Header) == 16);

using Secret = std::array<uint8_t, kSecretBytes>;

// Returns "" when h is acceptable, else why not.
std::string check_header(const Header& h, bool from_server);
Secret random_secret();
// The same seed gives the same secret on every host: for rendezvous whose only shared fact is the
// seed (an address, a job's identity). It keeps strangers' stores apart, it protects nothing.
Secret derived_secret(const std::string& seed);
std::string secret_to_hex(const Secret& s);
// The first 16 hex digits: what names a job's keys in its store and its shared memory.
inline std::string job_key_of(const Secret& s) { return secret_to_hex(s).substr(0, 16); }
// Throws coralInvalidArgument when hex is not 64 hex digits.
Secret secret_from_hex(const std::string& hex);
bool secrets_equal(const uint8_t* a, const uint8_t* b);  // constant time

}  // namespace coral::bootstrap::wire
