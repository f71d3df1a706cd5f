// Small blocking-socket helpers (IPv4 and IPv6) shared by the TCP store and TCP transport.
#pragma once
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace coral::net {

using Clock = std::chrono::steady_clock;

struct SockAddr {
  sockaddr_storage ss{};
  socklen_t len = 0;
  std::string str() const;  // "1.2.3.4:5" or "[::1]:5"
  int port() const;
  void set_port(int port);
};

// "host:port", "[v6]:port"; the host may be a name. Throws coralInvalidArgument when malformed.
SockAddr resolve(const std::string& host_port);
SockAddr resolve(const std::string& host, int port);
// Every interface of an address family ("::" with v6, else "0.0.0.0") at port: where a server
// listens that others reach at an address of that family.
SockAddr any_address(bool v6, int port);
// Listening socket bound to addr (port 0 = ephemeral); returns fd.
int listen_on(const SockAddr& addr, int backlog = 128);
SockAddr local_address(int fd);
// Connects, retrying refused/unreachable until deadline. Throws coralSystemError/coralTimeout,
// or coralRemoteError as soon as *stop is seen set (a creation given up).
int connect_retry(const SockAddr& addr, Clock::time_point deadline, const std::atomic<bool>* stop = nullptr);
// Full-buffer I/O with a deadline; false on EOF. Throws on error or timeout.
bool send_all(int fd, const void* buf, size_t n, Clock::time_point deadline);
bool recv_all(int fd, void* buf, size_t n, Clock::time_point deadline);
void set_nonblocking(int fd, bool on);
void set_nodelay(int fd);
// An address of this host that other hosts can reach: the first non-loopback IPv4 of an up
// interface, else 127.0.0.1.
std::string default_host_address();

}  // namespace coral::net
