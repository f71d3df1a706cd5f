#include "transport/tcp/interface.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"

namespace coral::transport::tcp {

namespace {

struct IfAddr {
  std::string name;
  net::SockAddr addr;
  bool loopback;
};

std::vector<IfAddr> interfaces() {
  std::vector<IfAddr> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) fail_errno("getifaddrs", errno);
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || !(i->ifa_flags & IFF_UP)) continue;
    int fam = i->ifa_addr->sa_family;
    if (fam != AF_INET && fam != AF_INET6) continue;
    IfAddr a{i->ifa_name, {}, (i->ifa_flags & IFF_LOOPBACK) != 0};
    a.addr.len = fam == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    std::memcpy(&a.addr.ss, i->ifa_addr, a.addr.len);
    if (fam == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<sockaddr_in6*>(&a.addr.ss)->sin6_addr)) continue;
    out.push_back(a);
  }
  freeifaddrs(list);
  return out;
}

bool same_ip(const net::SockAddr& a, const net::SockAddr& b) {
  if (a.ss.ss_family != b.ss.ss_family) return false;
  if (a.ss.ss_family == AF_INET)
    return reinterpret_cast<const sockaddr_in*>(&a.ss)->sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in*>(&b.ss)->sin_addr.s_addr;
  return std::memcmp(&reinterpret_cast<const sockaddr_in6*>(&a.ss)->sin6_addr,
                     &reinterpret_cast<const sockaddr_in6*>(&b.ss)->sin6_addr, 16) == 0;
}

int wanted_family() {
  std::string f = config::get_string("CORAL_SOCKET_FAMILY");
  if (f == "auto") return AF_UNSPEC;
  if (f == "ipv4" || f == "AF_INET") return AF_INET;
  if (f == "ipv6" || f == "AF_INET6") return AF_INET6;
  fail(coralInvalidArgument, "CORAL_SOCKET_FAMILY must be auto, ipv4 or ipv6, not '" + f + "'");
}

}  // namespace

bool ifname_matches(const std::string& spec, const std::string& name) {
  std::string s = spec;
  bool exclude = !s.empty() && s[0] == '^';
  if (exclude) s.erase(0, 1);
  bool exact = !s.empty() && s[0] == '=';
  if (exact) s.erase(0, 1);
  bool hit = false;
  for (const std::string& item : config::split(s, ','))
    if (!item.empty() && (exact ? name == item : name.compare(0, item.size(), item) == 0)) hit = true;
  return exclude ? !hit : hit;
}

LocalAddress choose_address(const std::string& toward, const std::string& preferred) {
  const int family = wanted_family();
  auto all = interfaces();
  auto pick = [&](auto&& ok) -> const IfAddr* {
    // IPv4 first in auto mode: it is what every launcher and firewall expects.
    for (int fam : {AF_INET, AF_INET6})
      for (const IfAddr& a : all)
        if ((family == AF_UNSPEC || family == fam) && a.addr.ss.ss_family == fam && ok(a)) return &a;
    return nullptr;
  };
  if (config::is_set("CORAL_SOCKET_IFNAME")) {
    std::string spec = config::get_string("CORAL_SOCKET_IFNAME");
    // Excluding never picks loopback by accident: a multi-host job cannot use it.
    const IfAddr* a =
        pick([&](const IfAddr& i) { return ifname_matches(spec, i.name) && !(spec[0] == '^' && i.loopback); });
    if (!a)
      fail(coralInvalidArgument, "CORAL_SOCKET_IFNAME='" + spec + "' matches no up interface with an address" +
                                     (family == AF_UNSPEC ? "" : " of CORAL_SOCKET_FAMILY"));
    return {a->addr, a->name};
  }
  if (!toward.empty() && !preferred.empty())
    if (const IfAddr* a = pick([&](const IfAddr& i) { return i.name == preferred && !i.loopback; })) {
      log::info(log::Topo, "tcp: interface {}, the topology's NIC for this rank", a->name);
      return {a->addr, a->name};
    }
  if (toward.empty()) {
    const IfAddr* a = pick([](const IfAddr& i) { return i.loopback; });
    if (!a) fail(coralSystemError, "no loopback address for an in-process job");
    return {a->addr, a->name};
  }
  // The kernel's route toward the store says which interface reaches the other hosts.
  net::SockAddr root = net::resolve(toward);
  int fd = socket(root.ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) fail_errno("socket", errno);
  net::SockAddr local;
  local.len = sizeof local.ss;
  bool routed = connect(fd, reinterpret_cast<const sockaddr*>(&root.ss), root.len) == 0 &&
                getsockname(fd, reinterpret_cast<sockaddr*>(&local.ss), &local.len) == 0;
  int err = errno;
  close(fd);
  if (!routed) fail_errno("no route from this host to the store at " + toward + " (set CORAL_SOCKET_IFNAME)", err);
  std::string ifname;
  for (const IfAddr& a : all)
    if (same_ip(a.addr, local)) ifname = a.name;
  if (family == AF_UNSPEC || family == local.ss.ss_family) {
    local.set_port(0);
    return {local, ifname};
  }
  const IfAddr* a = pick([&](const IfAddr& i) { return i.name == ifname; });
  if (!a)
    fail(coralInvalidArgument,
         "interface " + ifname + " (the route to the store) has no address of CORAL_SOCKET_FAMILY");
  return {a->addr, a->name};
}

}  // namespace coral::transport::tcp
