#include "transport/tcp/domain.h"

#include <poll.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "transport/tcp/interface.h"

namespace coral::transport::tcp {

namespace {

using Clock = std::chrono::steady_clock;

Geometry geometry_from_config() {
  uint64_t slot = config::get_bytes("CORAL_SOCKET_SLOT_BYTES");
  int64_t nslots = config::get_int("CORAL_SOCKET_NSLOTS");
  int64_t nsocks = config::get_int("CORAL_SOCKET_NSOCKS");
  if (slot < 4096 || slot > (1u << 30) || slot % 64)
    fail(coralInvalidArgument, "CORAL_SOCKET_SLOT_BYTES must be a multiple of 64 between 4K and 1G");
  if (nslots < 2 || nslots > 1024) fail(coralInvalidArgument, "CORAL_SOCKET_NSLOTS must be between 2 and 1024");
  if (nsocks < 1 || nsocks > kMaxSockets)
    fail(coralInvalidArgument, "CORAL_SOCKET_NSOCKS must be between 1 and " + std::to_string(kMaxSockets));
  return {static_cast<uint32_t>(slot), static_cast<uint32_t>(nslots), static_cast<int>(nsocks)};
}

std::string ranks_list(const std::vector<int>& r) {
  std::string s;
  for (int q : r) s += (s.empty() ? "" : ", ") + std::to_string(q);
  return s;
}

}  // namespace

TcpDomain::TcpDomain(const ConnectArgs& a) : nranks_(static_cast<int>(a.peers->size())) {
  int64_t nthreads = config::get_int("CORAL_SOCKET_NTHREADS");
  if (nthreads < 0 || nthreads > kMaxSockets)
    fail(coralInvalidArgument, fmt::format("CORAL_SOCKET_NTHREADS must be between 0 (the waiting thread does the "
                                           "socket I/O) and {}, not {}", kMaxSockets, nthreads));
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epfd_ < 0) fail_errno("epoll_create1", errno);
  try {
    connect_all(a);
    // More threads than sockets per pair would have nothing to do.
    if (nthreads > 0) start_threads(static_cast<int>(std::min<int64_t>(nthreads, geometry_from_config().nsocks)));
  } catch (...) {
    stop_threads();
    links_.clear();
    close(epfd_);
    throw;
  }
}

void TcpDomain::connect_all(const ConnectArgs& a) {
  const Geometry g = geometry_from_config();
  const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<long long>(a.timeout_s * 1000));
  LocalAddress local = choose_address(a.store->address());
  int lfd = net::listen_on(local.addr, SOMAXCONN);
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{lfd};
  net::SockAddr me = net::local_address(lfd);
  // The token proves a connection comes from this job: only ranks that passed the store's
  // secret check can read it.
  wire::Secret token = wire::random_secret();
  a.store->set(a.prefix + "/addr/" + std::to_string(a.rank),
               to_bytes(me.str() + " " + wire::secret_to_hex(token) + " " + std::to_string(g.nsocks) + " " +
                        std::to_string(g.slot_bytes) + " " + std::to_string(g.nslots)));
  log::info(log::Net, "tcp: listening on {} ({}), {} socket(s) per peer", me.str(), local.ifname, g.nsocks);

  std::map<int, std::vector<int>> fds;  // peer -> fd per socket index
  std::map<int, std::string> where;
  auto left = [&] { return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()); };
  // Lower ranks connect to higher ones; the hello goes out at once, so no side waits on the other.
  for (int q : a.targets) {
    if (q < a.rank) continue;
    std::string info = to_string(a.store->get(a.prefix + "/addr/" + std::to_string(q), left()));
    char addr[128], hex[80];
    unsigned nsocks = 0, slot = 0, nslots = 0;
    if (std::sscanf(info.c_str(), "%127s %79s %u %u %u", addr, hex, &nsocks, &slot, &nslots) != 5)
      fail(coralRemoteError, "tcp: malformed address record of rank " + std::to_string(q));
    if (static_cast<int>(nsocks) != g.nsocks || slot != g.slot_bytes || nslots != g.nslots)
      fail(coralInvalidUsage, fmt::format("tcp: rank {} uses {} socket(s) and {} slots of {} bytes, rank {} uses {} and "
                                          "{} of {}: set CORAL_SOCKET_NSOCKS/NSLOTS/SLOT_BYTES alike everywhere",
                                          q, nsocks, nslots, slot, a.rank, g.nsocks, g.nslots, g.slot_bytes));
    wire::Secret theirs = wire::secret_from_hex(hex);
    net::SockAddr to = net::resolve(addr);
    where[q] = to.str();
    for (int i = 0; i < g.nsocks; ++i) {
      int fd = net::connect_retry(to, deadline);
      Hello h{kHelloMagic, kVersion, static_cast<uint16_t>(i), static_cast<uint16_t>(g.nsocks), 0, a.rank, q,
              g.slot_bytes, g.nslots, {}};
      std::memcpy(h.token, theirs.data(), sizeof h.token);
      if (!net::send_all(fd, &h, sizeof h, deadline)) {
        close(fd);
        fail(coralRemoteError, "tcp: rank " + std::to_string(q) + " at " + to.str() + " closed the connection at once");
      }
      fds[q].push_back(fd);
    }
  }
  // Accept the lower ranks' sockets; anything else that connects is turned away and logged.
  std::set<int> expect;
  for (int q : a.targets)
    if (q < a.rank) expect.insert(q);
  size_t missing = expect.size() * static_cast<size_t>(g.nsocks);
  std::map<int, std::vector<int>> got;
  while (missing > 0) {
    pollfd p{lfd, POLLIN, 0};
    int rc = poll(&p, 1, static_cast<int>(std::max<long long>(0, std::min<long long>(left().count(), 1000))));
    if (rc < 0 && errno != EINTR) fail_errno("poll", errno);
    if (rc <= 0) {
      if (Clock::now() >= deadline) {
        std::vector<int> absent;
        for (int q : expect)
          if (got[q].size() < static_cast<size_t>(g.nsocks)) absent.push_back(q);
        fail(coralTimeout, "tcp: rank " + std::to_string(a.rank) + " timed out waiting for ranks " + ranks_list(absent) +
                               " to connect (CORAL_TIMEOUT)");
      }
      continue;
    }
    net::SockAddr from;
    from.len = sizeof from.ss;
    int fd = accept4(lfd, reinterpret_cast<sockaddr*>(&from.ss), &from.len, SOCK_CLOEXEC);
    if (fd < 0) continue;
    Hello h{};
    std::string why;
    try {
      // A silent stranger must not hold up the job: it gets a few seconds to say hello.
      auto hello_by = std::min(deadline, Clock::now() + std::chrono::seconds(5));
      why = net::recv_all(fd, &h, sizeof h, hello_by) ? check_hello(h, a.rank, nranks_, g, token.data()) : "closed before hello";
    } catch (const Error& e) {
      why = e.what();
    }
    if (why.empty() && !expect.count(h.from)) why = fmt::format("rank {} is not expected over tcp", h.from);
    auto& slots = got[h.from];
    if (why.empty()) slots.resize(static_cast<size_t>(g.nsocks), -1);
    if (why.empty() && slots[h.sock] != -1) why = fmt::format("socket {} of rank {} connected twice", h.sock, h.from);
    if (!why.empty()) {
      log::warn(log::Net, "tcp: rank {} refused a connection from {}: {}", a.rank, from.str(), why);
      close(fd);
      continue;
    }
    slots[h.sock] = fd;
    where[h.from] = from.str();
    --missing;
  }
  for (auto& [q, v] : got)
    if (!v.empty()) fds[q] = v;

  for (auto& [q, v] : fds) {
    for (int fd : v) {
      net::set_nonblocking(fd, true);
      net::set_nodelay(fd);
    }
    auto l = std::make_unique<TcpLink>(this, q, where[q], g, v);
    for (int i = 0; i < l->nsocks(); ++i) {
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP;
      ev.data.u64 = sock_key(q, i);
      if (epoll_ctl(epfd_, EPOLL_CTL_ADD, v[static_cast<size_t>(i)], &ev) != 0) fail_errno("epoll_ctl", errno);
    }
    links_.emplace(q, std::move(l));
  }
  log::info(log::Net, "tcp: rank {} connected to {} peer(s)", a.rank, links_.size());
}

TcpDomain::~TcpDomain() {
  {
    IoLock lock(mu_);
    for (auto& [q, l] : links_)
      if (l->failure().empty()) l->queue_bye();
    // Closing a socket that still has unread input resets the connection, and a reset throws
    // away whatever the kernel had not delivered yet. So: keep reading until every byte we sent
    // is acknowledged by the peer's kernel (then it survives a reset), within a bound.
    auto unacked = [&] {
      if (any_output()) return true;
      for (auto& [q, l] : links_)
        for (int i = 0; i < l->nsocks(); ++i) {
          int queued = 0;
          if (l->failure().empty() && ioctl(l->sock(i).fd, SIOCOUTQ, &queued) == 0 && queued > 0) return true;
        }
      return false;
    };
    auto until = Clock::now() + std::chrono::seconds(5);
    while (unacked() && Clock::now() < until) pump(lock, 1);
  }
  stop_threads();
  links_.clear();
  if (epfd_ >= 0) close(epfd_);
}

Link* TcpDomain::link(int peer) {
  auto it = links_.find(peer);
  return it == links_.end() ? nullptr : it->second.get();
}

void TcpDomain::output_queued(TcpLink* l) {
  if (!threaded()) {
    if (!l->write_out()) want_write(l);
    return;
  }
  for (int i = 0; i < l->nsocks(); ++i)
    if (!l->sock(i).out.empty()) {
      uint64_t one = 1;
      [[maybe_unused]] ssize_t n = ::write(io_[static_cast<size_t>(i) % io_.size()]->kick, &one, sizeof one);
    }
}

void TcpDomain::want_write(TcpLink* l) {
  if (std::find(writers_.begin(), writers_.end(), l) == writers_.end()) writers_.push_back(l);
}

void TcpDomain::set_events(TcpLink* l, bool want_out) {
  for (int i = 0; i < l->nsocks(); ++i) {
    Sock& s = l->sock(i);
    if (!s.open || s.out.empty()) continue;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | (want_out ? uint32_t{EPOLLOUT} : 0u);
    ev.data.u64 = sock_key(l->peer(), i);
    epoll_ctl(epfd_, EPOLL_CTL_MOD, s.fd, &ev);
  }
}

void TcpDomain::write_pending() {
  for (size_t i = 0; i < writers_.size();) {
    if (writers_[i]->write_out()) {
      writers_[i] = writers_.back();
      writers_.pop_back();
    } else {
      ++i;
    }
  }
}

void TcpDomain::progress_link(TcpLink* focus) {
  write_pending();
  for (int i = 0; i < focus->nsocks(); ++i) {
    Sock& s = focus->sock(i);
    if (s.open && !focus->read_socket(i)) epoll_ctl(epfd_, EPOLL_CTL_DEL, s.fd, nullptr);
  }
}

void TcpDomain::spin_pass(TcpLink* focus, unsigned n) {
  if (n % kFullPass == 0) progress(0, focus, n % (kFullPass * kFullPass) == 0);
  else if (focus) progress_link(focus);
  else write_pending();
}

void TcpDomain::progress(int timeout_ms, const TcpLink* focus, bool small_too) {
  write_pending();
  const bool sleeping = timeout_ms > 0 && !writers_.empty();
  if (sleeping)
    for (TcpLink* l : writers_) set_events(l, true);
  epoll_event ev[64];
  int n = epoll_wait(epfd_, ev, 64, timeout_ms);
  for (int k = 0; k < n; ++k) {
    const int peer = key_peer(ev[k].data.u64), sock = key_sock(ev[k].data.u64);
    TcpLink* l = links_.at(peer).get();
    if (ev[k].events & EPOLLOUT) {
      if (!l->write_out()) want_write(l);
    }
    if (!(ev[k].events & ~EPOLLOUT)) continue;
    if (!small_too && l != focus && !(ev[k].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
      int queued = 0;
      if (ioctl(l->sock(sock).fd, SIOCINQ, &queued) == 0 && queued < kEarlyReadBytes) continue;
    }
    if (!l->read_socket(sock)) epoll_ctl(epfd_, EPOLL_CTL_DEL, l->sock(sock).fd, nullptr);
  }
  if (sleeping)
    for (TcpLink* l : writers_) set_events(l, false);
}

void TcpDomain::drain(WaitMonitor& mon) {
  if (threaded()) {
    // As below: one peer with output still queued at a time; a failed link dropped its output.
    for (;;) {
      int peer = -1;
      {
        std::lock_guard<std::recursive_mutex> lock(mu_);
        for (auto& [q, l] : links_)
          if (l->failure().empty() && l->has_output()) {
            peer = q;
            break;
          }
      }
      if (peer < 0) return;
      TcpLink* l = links_.at(peer).get();
      wait(mon, peer, [&] { return !l->failure().empty() || !l->has_output(); });
    }
  }
  // The wait watches one peer at a time (whose failure or silence ends it): always one whose
  // output is still pending, never one that already took everything and may have left.
  while (!writers_.empty()) {
    const int peer = writers_.front()->peer();
    wait(mon, peer, [&] {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      // A failed link drops its output: the wait on it reports the failure instead.
      std::erase_if(writers_, [](TcpLink* l) { return !l->failure().empty(); });
      return writers_.empty() || writers_.front()->peer() != peer;
    });
  }
}

std::string TcpDomain::peer_failure(int peer) {
  IoLock lock(mu_);
  return lost_peers(
      peer, links_, [&] { pump(lock, 10); },
      [](int, const TcpLink& l) { return l.closed_cleanly(); }, [](const TcpLink& l) { return l.failure(); });
}

std::string TcpDomain::remote_abort() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  for (auto& [q, l] : links_)
    if (!l->abort_text().empty()) return l->abort_text();
  return "";
}

void TcpDomain::abort(const std::string& why) {
  IoLock lock(mu_);
  for (auto& [q, l] : links_)
    if (l->failure().empty()) l->queue_abort(why);
  auto until = Clock::now() + std::chrono::milliseconds(500);
  while (any_output() && Clock::now() < until) pump(lock, 1);
}

bool TcpDomain::any_output() {
  for (auto& [q, l] : links_)
    if (l->failure().empty() && l->has_output()) return true;
  return false;
}

void TcpDomain::pump(IoLock& lk, int ms) {
  if (threaded()) let_io_run(lk, ms);
  else progress(ms);
}

}  // namespace coral::transport::tcp
