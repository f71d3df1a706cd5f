#include "base/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "base/error.h"

namespace coral::net {

std::string SockAddr::str() const {
  char host[INET6_ADDRSTRLEN] = "?";
  if (ss.ss_family == AF_INET) {
    auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    // fmt, not string + to_string: GCC 12 warns falsely on that (-Wrestrict, GCC bug 105329).
    return fmt::format("{}:{}", host, ntohs(a->sin_port));
  }
  auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
  inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
  return fmt::format("[{}]:{}", host, ntohs(a->sin6_port));
}

int SockAddr::port() const {
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&ss)->sin_port);
  return ntohs(reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_port);
}

void SockAddr::set_port(int port) {
  if (ss.ss_family == AF_INET)
    reinterpret_cast<sockaddr_in*>(&ss)->sin_port = htons(port);
  else
    reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port = htons(port);
}

SockAddr any_address(bool v6, int port) { return resolve(v6 ? "::" : "0.0.0.0", port); }

SockAddr resolve(const std::string& host, int port) {
  if (port < 0 || port > 65535) fail(coralInvalidArgument, "port " + std::to_string(port) + " out of range");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (rc != 0 || !res) fail(coralInvalidArgument, "cannot resolve host '" + host + "': " + gai_strerror(rc));
  SockAddr a;
  std::memcpy(&a.ss, res->ai_addr, res->ai_addrlen);
  a.len = res->ai_addrlen;
  freeaddrinfo(res);
  return a;
}

SockAddr resolve(const std::string& host_port) {
  std::string host, port;
  if (!host_port.empty() && host_port[0] == '[') {
    size_t close = host_port.find(']');
    if (close == std::string::npos || close + 1 >= host_port.size() || host_port[close + 1] != ':')
      fail(coralInvalidArgument, "address '" + host_port + "' is not [ipv6]:port");
    host = host_port.substr(1, close - 1);
    port = host_port.substr(close + 2);
  } else {
    size_t colon = host_port.rfind(':');
    if (colon == std::string::npos || colon == 0)
      fail(coralInvalidArgument, "address '" + host_port + "' is not host:port");
    host = host_port.substr(0, colon);
    port = host_port.substr(colon + 1);
  }
  char* end = nullptr;
  long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end || p <= 0 || p > 65535)
    fail(coralInvalidArgument, "address '" + host_port + "' has a bad port");
  return resolve(host, static_cast<int>(p));
}

int listen_on(const SockAddr& addr, int backlog) {
  int fd = socket(addr.ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) fail_errno("socket", errno);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&addr.ss), addr.len) != 0) {
    int e = errno;
    close(fd);
    fail_errno("bind " + addr.str(), e);
  }
  if (listen(fd, backlog) != 0) {
    int e = errno;
    close(fd);
    fail_errno("listen " + addr.str(), e);
  }
  return fd;
}

SockAddr local_address(int fd) {
  SockAddr a;
  a.len = sizeof a.ss;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a.ss), &a.len);
  return a;
}

void set_nonblocking(int fd, bool on) {
  int fl = fcntl(fd, F_GETFL);
  fcntl(fd, F_SETFL, on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK));
}

void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

int connect_retry(const SockAddr& addr, Clock::time_point deadline, const std::atomic<bool>* stop) {
  int last_err = 0;
  while (true) {
    if (stop && stop->load()) fail(coralRemoteError, "connect to " + addr.str() + ": given up (the caller aborted)");
    int fd = socket(addr.ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) fail_errno("socket", errno);
    if (connect(fd, reinterpret_cast<const sockaddr*>(&addr.ss), addr.len) == 0) {
      set_nodelay(fd);
      return fd;
    }
    last_err = errno;
    close(fd);
    if (last_err != ECONNREFUSED && last_err != ENETUNREACH && last_err != EHOSTUNREACH && last_err != ETIMEDOUT &&
        last_err != EAGAIN && last_err != EINTR)
      fail_errno("connect to " + addr.str(), last_err);
    if (Clock::now() >= deadline)
      fail(coralTimeout, "connect to " + addr.str() + " timed out (" + std::strerror(last_err) + ")");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

static void wait_fd(int fd, short events, Clock::time_point deadline, const char* what) {
  while (true) {
    pollfd p{fd, events, 0};
    int rc = poll(&p, 1, remaining_ms(deadline));
    if (rc > 0) return;
    if (rc == 0) fail(coralTimeout, std::string(what) + " timed out");
    if (errno != EINTR) fail_errno(what, errno);
  }
}

bool send_all(int fd, const void* buf, size_t n, Clock::time_point deadline) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k > 0) {
      p += k;
      n -= static_cast<size_t>(k);
    } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      wait_fd(fd, POLLOUT, deadline, "socket send");
    } else if (k < 0 && errno == EINTR) {
      continue;
    } else {
      if (errno == EPIPE || errno == ECONNRESET) return false;
      fail_errno("socket send", errno);
    }
  }
  return true;
}

bool recv_all(int fd, void* buf, size_t n, Clock::time_point deadline) {
  char* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t k = ::recv(fd, p, n, MSG_DONTWAIT);
    if (k > 0) {
      p += k;
      n -= static_cast<size_t>(k);
    } else if (k == 0) {
      return false;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      wait_fd(fd, POLLIN, deadline, "socket receive");
    } else if (errno != EINTR) {
      if (errno == ECONNRESET) return false;
      fail_errno("socket receive", errno);
    }
  }
  return true;
}

std::string default_host_address() {
  ifaddrs* list = nullptr;
  std::string best = "127.0.0.1";
  if (getifaddrs(&list) != 0) return best;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    if ((i->ifa_flags & IFF_LOOPBACK) || !(i->ifa_flags & IFF_UP)) continue;
    char host[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, host, sizeof host);
    best = host;
    break;
  }
  freeifaddrs(list);
  return best;
}

}  // namespace coral::net
