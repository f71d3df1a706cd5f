#include "bootstrap/unique_id.h"

#include <cstring>

#include "base/error.h"

namespace coral::bootstrap {

namespace {

constexpr char kIdMagic[8] = {'C', 'R', 'L', 'I', 'D', '0', '1', 0};
constexpr uint8_t kRank0Serves = 1;

struct IdLayout {
  char magic[8];
  char addr[kMaxIdAddr + 1];
  uint8_t secret[wire::kSecretBytes];
  uint8_t flags;  // kRank0Serves; ids from before the flag have 0 here
  char pad[CORAL_UNIQUE_ID_BYTES - 8 - (kMaxIdAddr + 1) - wire::kSecretBytes - 1];
};
static_assert(sizeof(IdLayout) == CORAL_UNIQUE_ID_BYTES);

// host:port or [v6]:port, host made of the characters of names and address literals; `bad`
// says what is wrong and throws.
template <typename Bad>
void check_addr(const std::string& a, Bad bad) {
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

[[noreturn]] void bad_id(const std::string& why) {
  fail(coralInvalidArgument, "commId was not made by coralGetUniqueId: " + why);
}

}  // namespace

void encode_unique_id(const UniqueId& id, char (&out)[CORAL_UNIQUE_ID_BYTES]) {
  if (id.addr.size() > kMaxIdAddr)
    fail(coralInvalidArgument, "store address '" + id.addr + "' is too long for a unique id");
  check_addr(id.addr,
             [&](const std::string& why) { fail(coralInvalidArgument, "store address '" + id.addr + "': " + why); });
  IdLayout l{};
  std::memcpy(l.magic, kIdMagic, sizeof kIdMagic);
  std::memcpy(l.addr, id.addr.data(), id.addr.size());
  std::memcpy(l.secret, id.secret.data(), id.secret.size());
  l.flags = id.rank0_serves ? kRank0Serves : 0;
  std::memcpy(out, &l, sizeof l);
}

UniqueId decode_unique_id(const char (&in)[CORAL_UNIQUE_ID_BYTES]) {
  IdLayout l;
  std::memcpy(&l, in, sizeof l);
  if (std::memcmp(l.magic, kIdMagic, sizeof kIdMagic) != 0) bad_id("bad magic");
  const void* nul = std::memchr(l.addr, 0, sizeof l.addr);
  if (!nul) bad_id("the address is not terminated");
  if (l.flags & ~kRank0Serves) bad_id("unknown flags");
  UniqueId id;
  id.addr.assign(static_cast<const char*>(l.addr), static_cast<const char*>(nul));
  check_addr(id.addr, [](const std::string& why) { bad_id(why); });
  std::memcpy(id.secret.data(), l.secret, id.secret.size());
  id.rank0_serves = l.flags & kRank0Serves;
  return id;
}

}  // namespace coral::bootstrap
