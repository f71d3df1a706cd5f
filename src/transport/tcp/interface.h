// Which local address a network transport listens on.
#pragma once
#include <string>

#include "base/socket.h"

namespace coral::transport::tcp {

struct LocalAddress {
  net::SockAddr addr;  // port 0
  std::string ifname;
};

// CORAL_SOCKET_IFNAME selects interfaces NCCL-style: "eth0,ib" (name prefixes), "^docker,lo"
// (all but these), "=eth0" (exact names). Without it: the address the kernel routes toward the
// store (`toward`, host:port), or loopback for an in-process store. CORAL_SOCKET_FAMILY
// (auto, ipv4, ipv6) narrows the choice. Throws coralInvalidArgument naming the knob when
// nothing matches.
// preferred: the interface the topology chose for this rank (ConnectArgs::nic), used when it is
// up with an address of the family and CORAL_SOCKET_IFNAME is unset.
LocalAddress choose_address(const std::string& toward, const std::string& preferred = "");

// Exposed for tests: whether interface `name` passes the CORAL_SOCKET_IFNAME filter `spec`.
bool ifname_matches(const std::string& spec, const std::string& name);

}  // namespace coral::transport::tcp
