#include "transport/tcp/domain.h"

#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "base/socket.h"
#include "transport/tcp/dial.h"

namespace coral::transport::tcp {

namespace {

Geometry geometry_from_config() {
  uint64_t slot = config::get_bytes("CORAL_SOCKET_SLOT_BYTES");
  int64_t nslots = config::get_int("CORAL_SOCKET_NSLOTS");
  int64_t nsocks = config::get_int("CORAL_SOCKET_NSOCKS");
  // The registry holds the ranges (at most kMaxSockets sockets).
  return {static_cast<uint32_t>(slot), static_cast<uint32_t>(nslots), static_cast<int>(nsocks)};
}

}  // namespace

TcpDomain::TcpDomain(const ConnectArgs& a) : nranks_(static_cast<int>(a.peers->size())) {
  int64_t nthreads = config::get_int("CORAL_SOCKET_NTHREADS");
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
  Listener listener;  // open until every link is made
  listen_and_publish(a, g, listener);
  PeerSockets socks;
  dial_peers(a, g, deadline, socks);
  accept_peers(a, g, nranks_, listener, deadline, socks);
  for (auto& [q, v] : socks.fds) add_link(q, socks.where[q], g, v);
  log::info(log::Net, "tcp: rank {} connected to {} peer(s)", a.rank, links_.size());
}

void TcpDomain::add_link(int peer, const std::string& where, const Geometry& g, const std::vector<int>& fds) {
  for (int fd : fds) {
    net::set_nonblocking(fd, true);
    net::set_nodelay(fd);
  }
  auto l = std::make_unique<TcpLink>(this, peer, where, g, fds);
  for (int i = 0; i < l->nsocks(); ++i) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = sock_key(peer, i);
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fds[static_cast<size_t>(i)], &ev) != 0) fail_errno("epoll_ctl", errno);
  }
  links_.emplace(peer, std::move(l));
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
  if (n % kFullPass == 0)
    progress(0, focus, n % (kFullPass * kFullPass) == 0);
  else if (focus)
    progress_link(focus);
  else
    write_pending();
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
      peer, links_, [&] { pump(lock, 10); }, [](int, const TcpLink& l) { return l.closed_cleanly(); },
      [](const TcpLink& l) { return l.failure(); });
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
  if (threaded())
    let_io_run(lk, ms);
  else
    progress(ms);
}

}  // namespace coral::transport::tcp
