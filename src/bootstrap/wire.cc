#include "bootstrap/wire.h"

#include <sys/random.h>

#include <cerrno>

#include "base/error.h"

namespace coral::bootstrap::wire {

std::string check_header(const Header& h, bool from_server) {
  if (h.magic != kMagic) return "bad magic";
  if (h.key_len > kMaxKey) return "key length " + std::to_string(h.key_len) + " too large";
  if (h.value_len > kMaxValue) return "value length " + std::to_string(h.value_len) + " too large";
  auto t = static_cast<Msg>(h.type);
  bool ok = from_server ? (t == Msg::Ok || t == Msg::Value || t == Msg::Denied)
                        : (t == Msg::Hello || t == Msg::Set || t == Msg::Get || t == Msg::Add);
  if (!ok) return "unexpected message type " + std::to_string(h.type);
  if (t == Msg::Hello && h.value_len != kSecretBytes) return "bad hello length";
  if (t == Msg::Add && h.value_len != 8) return "bad add length";
  return "";
}

Secret random_secret() {
  Secret s{};
  size_t got = 0;
  while (got < s.size()) {
    ssize_t k = getrandom(s.data() + got, s.size() - got, 0);
    if (k < 0 && errno != EINTR) fail_errno("getrandom", errno);
    if (k > 0) got += static_cast<size_t>(k);
  }
  return s;
}

Secret derived_secret(const std::string& seed) {
  Secret s{};
  uint64_t h = 1469598103934665603ull;  // FNV-1a, once per byte of the secret
  for (size_t i = 0; i < s.size(); ++i) {
    for (char c : seed) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
    h ^= i;
    s[i] = static_cast<uint8_t>(h >> 24);
  }
  return s;
}

std::string secret_to_hex(const Secret& s) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (uint8_t b : s) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

Secret secret_from_hex(const std::string& hex) {
  auto val = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  Secret s{};
  if (hex.size() != 2 * kSecretBytes)
    fail(coralInvalidArgument, "job secret must be " + std::to_string(2 * kSecretBytes) + " hex digits");
  for (size_t i = 0; i < kSecretBytes; ++i) {
    int hi = val(hex[2 * i]), lo = val(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) fail(coralInvalidArgument, "job secret is not hexadecimal");
    s[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return s;
}

bool secrets_equal(const uint8_t* a, const uint8_t* b) {
  uint8_t diff = 0;
  for (size_t i = 0; i < kSecretBytes; ++i) diff |= a[i] ^ b[i];
  return diff == 0;
}

}  // namespace coral::bootstrap::wire
