#include "bootstrap/unique_id.h"

#include <cstring>

#include "base/error.h"

namespace coral::bootstrap {

namespace {

constexpr char kIdMagic[8] = {'C', 'R', 'L', 'I', 'D', '0', '1', 0};

struct IdLayout {
  char magic[8];
  char addr[kMaxIdAddr + 1];
  uint8_t secret[wire::kSecretBytes];
  char pad[CORAL_UNIQUE_ID_BYTES - 8 - (kMaxIdAddr + 1) - wire::kSecretBytes];
};
static_assert(sizeof(IdLayout) == CORAL_UNIQUE_ID_BYTES);

[[noreturn]] void bad(const std::string& why) {
  fail(coralInvalidArgument, "commId was not made by coralGetUniqueId: " + why);
}

// host:port or [v6]:port, host made of the characters of names and address literals.
void check_addr(const std::string& a) {
  std::string host, port;
  if (!a.empty() && a[0] == '[') {
    size_t close = a.find(']');
    if (close == std::string::npos || close + 1 >= a.size() || a[close + 1] != ':') bad("address is not [ipv6]:port");
    host = a.substr(1, close - 1);
    port = a.substr(close + 2);
    if (host.empty() || host.find_first_not_of("0123456789abcdefABCDEF:.%") != std::string::npos)
      bad("bad IPv6 address");
  } else {
    size_t colon = a.rfind(':');
    if (colon == std::string::npos || colon == 0) bad("address is not host:port");
    host = a.substr(0, colon);
    port = a.substr(colon + 1);
    if (host.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") !=
        std::string::npos)
      bad("bad host name");
  }
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) bad("bad port");
  const long p = std::strtol(port.c_str(), nullptr, 10);
  if (p < 1 || p > 65535) bad("bad port");
}

}  // namespace

void encode_unique_id(const UniqueId& id, char (&out)[CORAL_UNIQUE_ID_BYTES]) {
  if (id.addr.size() > kMaxIdAddr)
    fail(coralInvalidArgument, "store address '" + id.addr + "' is too long for a unique id");
  IdLayout l{};
  std::memcpy(l.magic, kIdMagic, sizeof kIdMagic);
  std::memcpy(l.addr, id.addr.data(), id.addr.size());
  std::memcpy(l.secret, id.secret.data(), id.secret.size());
  std::memcpy(out, &l, sizeof l);
}

UniqueId decode_unique_id(const char (&in)[CORAL_UNIQUE_ID_BYTES]) {
  IdLayout l;
  std::memcpy(&l, in, sizeof l);
  if (std::memcmp(l.magic, kIdMagic, sizeof kIdMagic) != 0) bad("bad magic");
  const void* nul = std::memchr(l.addr, 0, sizeof l.addr);
  if (!nul) bad("the address is not terminated");
  UniqueId id;
  id.addr.assign(static_cast<const char*>(l.addr), static_cast<const char*>(nul));
  check_addr(id.addr);
  std::memcpy(id.secret.data(), l.secret, id.secret.size());
  return id;
}

}  // namespace coral::bootstrap
