// Helper-thread mode of TcpDomain (CORAL_SOCKET_NTHREADS > 0): each thread owns socket i of
// every link for i % nthreads == its index, in its own epoll set, and is the only one to read or
// write those sockets. Link state (slots, credits, failures) stays under the domain lock; the
// threads drop it around each system call, so one thread's 256 KiB recv or send runs while
// another thread, or the executor, works.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/error.h"
#include "base/log.h"
#include "transport/tcp/domain.h"

namespace coral::transport::tcp {

namespace {
constexpr uint64_t kKick = ~uint64_t{0};
}  // namespace

void TcpDomain::start_threads(int n) {
  for (int t = 0; t < n; ++t) {
    auto io = std::make_unique<IoThread>();
    io->epfd = epoll_create1(EPOLL_CLOEXEC);
    io->kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (io->epfd < 0 || io->kick < 0) {
      const int err = errno;
      if (io->epfd >= 0) close(io->epfd);
      if (io->kick >= 0) close(io->kick);
      fail_errno("tcp helper thread set-up", err);
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kKick;
    epoll_ctl(io->epfd, EPOLL_CTL_ADD, io->kick, &ev);
    io_.push_back(std::move(io));
  }
  for (auto& [q, l] : links_)
    for (int i = 0; i < l->nsocks(); ++i) {
      int fd = l->sock(i).fd;
      epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr);
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP;
      ev.data.u64 = sock_key(q, i);
      if (epoll_ctl(io_[static_cast<size_t>(i % n)]->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) fail_errno("epoll_ctl", errno);
    }
  const int rank = log::thread_rank();  // the helpers log as the rank they work for
  for (int t = 0; t < n; ++t)
    io_[static_cast<size_t>(t)]->thread = std::thread([this, t, rank] {
      log::set_thread_rank(rank);
      io_loop(*io_[static_cast<size_t>(t)], t);
    });
  log::info(log::Net, "tcp: {} helper thread(s) do the socket I/O", n);
}

void TcpDomain::stop_threads() {
  for (auto& io : io_) {
    io->stop.store(true, std::memory_order_release);
    uint64_t one = 1;
    [[maybe_unused]] ssize_t w = ::write(io->kick, &one, sizeof one);
  }
  for (auto& io : io_) {
    if (io->thread.joinable()) io->thread.join();
    close(io->epfd);
    close(io->kick);
  }
  io_.clear();
}

void TcpDomain::io_loop(IoThread& t, int index) {
  epoll_event ev[64];
  while (!t.stop.load(std::memory_order_acquire)) {
    // Bounded, so a stop request is seen even if a kick were lost.
    int n = epoll_wait(t.epfd, ev, 64, 100);
    if (n <= 0) continue;
    bool kicked = false;
    {
      IoLock lk(mu_);
      for (int k = 0; k < n; ++k) {
        if (ev[k].data.u64 == kKick) {
          uint64_t count;
          [[maybe_unused]] ssize_t r = ::read(t.kick, &count, sizeof count);
          kicked = true;
          continue;
        }
        const int peer = key_peer(ev[k].data.u64), sock = key_sock(ev[k].data.u64);
        TcpLink* l = links_.at(peer).get();
        if (ev[k].events & EPOLLOUT) flush(t, l, sock, lk);
        if ((ev[k].events & ~EPOLLOUT) && !l->read_socket(sock, &lk))
          epoll_ctl(t.epfd, EPOLL_CTL_DEL, l->sock(sock).fd, nullptr);
      }
      if (kicked)
        for (auto& [q, l] : links_)
          for (int i = index; i < l->nsocks(); i += static_cast<int>(io_.size()))
            if (!l->sock(i).out.empty()) flush(t, l.get(), i, lk);
    }
    events_.fetch_add(1, std::memory_order_acq_rel);
    wake_if_sleeping(events_, sleeping_);
  }
}

void TcpDomain::flush(IoThread& t, TcpLink* l, int sock, IoLock& lk) {
  Sock& s = l->sock(sock);
  const bool want_out = !l->write_socket(sock, &lk);
  // The kernel's buffer filled: ask for EPOLLOUT until it is drained, then stop asking.
  if (want_out == s.out_armed || !s.open) return;
  s.out_armed = want_out;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP | (s.out_armed ? uint32_t{EPOLLOUT} : 0u);
  ev.data.u64 = sock_key(l->peer(), sock);
  epoll_ctl(t.epfd, EPOLL_CTL_MOD, s.fd, &ev);
}

void TcpDomain::let_io_run(IoLock& lk, int ms) {
  const uint32_t seen = events_.load(std::memory_order_acquire);
  lk.unlock();
  sleeping_.store(1, std::memory_order_seq_cst);
  futex_wait(&events_, seen, static_cast<long>(ms) * 1000 * 1000);
  sleeping_.store(0, std::memory_order_relaxed);
  lk.lock();
}

}  // namespace coral::transport::tcp
