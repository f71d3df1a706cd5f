#include "transport/tcp/dial.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include <fmt/format.h>

#include "base/error.h"
#include "base/log.h"
#include "base/socket.h"
#include "bootstrap/exchange.h"
#include "bootstrap/store.h"
#include "transport/tcp/interface.h"

namespace coral::transport::tcp {

namespace {

std::chrono::milliseconds left(Clock::time_point deadline) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
}

std::string ranks_list(const std::vector<int>& r) {
  std::string s;
  for (int q : r) s += (s.empty() ? "" : ", ") + std::to_string(q);
  return s;
}

// The hello: what a dialer sends on socket `sock` of the pair (from, to), and what the acceptor
// makes of it.

Hello make_hello(const Geometry& g, int from, int to, int sock, const bootstrap::wire::Secret& theirs) {
  Hello h{
      kHelloMagic, kVersion, static_cast<uint16_t>(sock), static_cast<uint16_t>(g.nsocks), 0, from, to, g.slot_bytes,
      g.nslots,    {}};
  std::memcpy(h.token, theirs.data(), sizeof h.token);
  return h;
}

// What a rank publishes: where it listens, the token its hellos must carry, and its link
// geometry (which every rank must share).
bootstrap::Record address_record(const Geometry& g, const std::string& addr, const std::string& token) {
  bootstrap::Record r("tcp address record", -1);
  r.add("addr", addr).add("token", token);
  r.add("nsocks", g.nsocks)
      .add("nslots", static_cast<uint64_t>(g.nslots))
      .add("slot_bytes", static_cast<uint64_t>(g.slot_bytes));
  return r;
}

// Dialing.

// Where a higher rank listens and the token it expects, from its record in the store.
struct PeerRecord {
  net::SockAddr to;
  bootstrap::wire::Secret token;
};

PeerRecord read_record(const ConnectArgs& a, const Geometry& g, int q, Clock::time_point deadline) {
  const bootstrap::Record theirs = bootstrap::Record::decode(
      a.store->get(a.prefix + "/addr/" + std::to_string(q), left(deadline)), "tcp address record", q);
  bootstrap::check_agreed(address_record(g, "", ""), theirs, a.rank,
                          {{"nsocks", "CORAL_SOCKET_NSOCKS"},
                           {"nslots", "CORAL_SOCKET_NSLOTS"},
                           {"slot_bytes", "CORAL_SOCKET_SLOT_BYTES"}});
  bootstrap::wire::Secret token;
  theirs.bytes("token", token.data(), token.size());
  return {net::resolve(theirs.text("addr")), token};
}

// Socket i to rank q, its hello sent at once.
int dial_socket(const ConnectArgs& a, const Geometry& g, int q, int i, const PeerRecord& r,
                Clock::time_point deadline) {
  int fd = net::connect_retry(r.to, deadline);
  Hello h = make_hello(g, a.rank, q, i, r.token);
  if (!net::send_all(fd, &h, sizeof h, deadline)) {
    close(fd);
    fail(coralRemoteError, "tcp: rank " + std::to_string(q) + " at " + r.to.str() + " closed the connection at once");
  }
  return fd;
}

// Accepting: the lower ranks' sockets, each matched to its peer and index by its hello.
class Acceptor {
 public:
  Acceptor(const ConnectArgs& a, const Geometry& g, int nranks, const Listener& l, Clock::time_point deadline)
      : a_(a), g_(g), nranks_(nranks), l_(l), deadline_(deadline) {
    for (int q : a.targets)
      if (q < a.rank) expect_.insert(q);
    missing_ = expect_.size() * static_cast<size_t>(g.nsocks);
  }

  // Hellos are read side by side: a stranger that connects and says nothing holds up only its
  // own connection (for kHelloSeconds), not the ranks queued behind it.
  void run(PeerSockets& out) {
    while (missing_ > 0) {
      std::vector<pollfd> fds{{l_.fd, POLLIN, 0}};
      for (const Pending& p : pending_) fds.push_back({p.fd, POLLIN, 0});
      const auto now = Clock::now();
      auto until = std::min(deadline_, now + std::chrono::seconds(1));
      for (const Pending& p : pending_) until = std::min(until, p.by);
      const int ms = static_cast<int>(
          std::max<long long>(0, std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count()));
      int rc = poll(fds.data(), fds.size(), ms);
      if (rc < 0 && errno != EINTR) fail_errno("poll", errno);
      for (size_t i = 0; i < pending_.size(); ++i)
        if (fds[i + 1].revents) read_hello(pending_[i], out);
      const auto later = Clock::now();
      for (Pending& p : pending_)
        if (p.fd >= 0 && later >= p.by) refuse(p, "no hello within 5 s");
      std::erase_if(pending_, [](const Pending& p) { return p.fd < 0; });
      if (fds[0].revents & POLLIN) accept_pending();
      if (missing_ > 0 && later >= deadline_) fail_timeout();
    }
    for (Pending& p : pending_) refuse(p, "arrived after every awaited socket");
    for (auto& [q, v] : got_)
      if (!v.empty()) out.fds[q] = v;
  }

 private:
  [[noreturn]] void fail_timeout() {
    std::vector<int> absent;
    for (int q : expect_)
      if (got_[q].size() < static_cast<size_t>(g_.nsocks)) absent.push_back(q);
    fail(coralTimeout, "tcp: rank " + std::to_string(a_.rank) + " timed out waiting for ranks " + ranks_list(absent) +
                           " to connect (CORAL_TIMEOUT)");
  }

  // For a hello that passed check_hello: "" when socket h.sock of h.from is still awaited.
  std::string match(const Hello& h) {
    if (!expect_.count(h.from)) return fmt::format("rank {} is not expected over tcp", h.from);
    auto& slots = got_[h.from];
    slots.resize(static_cast<size_t>(g_.nsocks), -1);
    if (slots[h.sock] != -1) return fmt::format("socket {} of rank {} connected twice", h.sock, h.from);
    return "";
  }

  struct Pending {
    int fd;
    net::SockAddr from;
    Clock::time_point by;
    Hello h{};
    size_t got = 0;
  };

  // Every connection queued now (the listener blocks: poll first, SOCK_NONBLOCK is the new socket's).
  void accept_pending() {
    while (true) {
      pollfd l{l_.fd, POLLIN, 0};
      if (poll(&l, 1, 0) <= 0) return;
      net::SockAddr from;
      from.len = sizeof from.ss;
      int fd = accept4(l_.fd, reinterpret_cast<sockaddr*>(&from.ss), &from.len, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) return;
      // Links use blocking sockets: only the hello is read without blocking (MSG_DONTWAIT).
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      pending_.push_back({fd, from, std::min(deadline_, Clock::now() + std::chrono::seconds(5))});
    }
  }

  // Anything that is not an awaited socket of this job is turned away and logged.
  void refuse(Pending& p, const std::string& why) {
    if (const uint64_t n = refusals_.admit())
      log::warn(log::Net, "tcp: rank {} refused a connection from {}: {}{}", a_.rank, p.from.str(), why,
                log::held_back(n));
    close(p.fd);
    p.fd = -1;
  }

  void read_hello(Pending& p, PeerSockets& out) {
    auto* at = reinterpret_cast<char*>(&p.h) + p.got;
    const ssize_t k = recv(p.fd, at, sizeof p.h - p.got, MSG_DONTWAIT);
    if (k == 0) return refuse(p, "closed before hello");
    if (k < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) refuse(p, std::strerror(errno));
      return;
    }
    p.got += static_cast<size_t>(k);
    if (p.got < sizeof p.h) return;
    std::string why = check_hello(p.h, a_.rank, nranks_, g_, l_.token.data());
    if (why.empty()) why = match(p.h);
    if (!why.empty()) return refuse(p, why);
    got_[p.h.from][p.h.sock] = p.fd;
    out.where[p.h.from] = p.from.str();
    p.fd = -1;
    --missing_;
  }

  const ConnectArgs& a_;
  const Geometry& g_;
  const int nranks_;
  const Listener& l_;
  const Clock::time_point deadline_;
  std::set<int> expect_;
  std::map<int, std::vector<int>> got_;  // peer -> fd per socket index (-1: not yet)
  std::vector<Pending> pending_;         // accepted, hello not complete yet
  log::Throttle refusals_;
  size_t missing_ = 0;  // sockets still to come
};

}  // namespace

Listener::~Listener() {
  if (fd >= 0) close(fd);
}

void listen_and_publish(const ConnectArgs& a, const Geometry& g, Listener& l) {
  LocalAddress local = choose_address(a.store->address(), a.nic);
  l.fd = net::listen_on(local.addr, SOMAXCONN);
  net::SockAddr me = net::local_address(l.fd);
  // The token proves a connection comes from this job: only ranks that passed the store's
  // secret check can read it.
  l.token = bootstrap::wire::random_secret();
  a.store->set(a.prefix + "/addr/" + std::to_string(a.rank),
               address_record(g, me.str(), std::string(l.token.begin(), l.token.end())).encode());
  log::info(log::Net, "tcp: listening on {} ({}), {} socket(s) per peer", me.str(), local.ifname, g.nsocks);
}

void dial_peers(const ConnectArgs& a, const Geometry& g, Clock::time_point deadline, PeerSockets& out) {
  // Lower ranks connect to higher ones; the hello goes out at once, so no side waits on the other.
  for (int q : a.targets) {
    if (q < a.rank) continue;
    PeerRecord r = read_record(a, g, q, deadline);
    out.where[q] = r.to.str();
    for (int i = 0; i < g.nsocks; ++i) {
      int fd = dial_socket(a, g, q, i, r, deadline);
      out.fds[q].push_back(fd);
    }
  }
}

void accept_peers(const ConnectArgs& a, const Geometry& g, int nranks, const Listener& l, Clock::time_point deadline,
                  PeerSockets& out) {
  Acceptor(a, g, nranks, l, deadline).run(out);
}

}  // namespace coral::transport::tcp
