#include "transport/tcp/dial.h"

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

// Reads an accepted socket's hello into h and checks it: "" when acceptable, else why not.
std::string receive_hello(int fd, Hello& h, int rank, int nranks, const Geometry& g,
                          const bootstrap::wire::Secret& token, Clock::time_point deadline) {
  try {
    // A silent stranger must not hold up the job: it gets a few seconds to say hello.
    auto hello_by = std::min(deadline, Clock::now() + std::chrono::seconds(5));
    return net::recv_all(fd, &h, sizeof h, hello_by) ? check_hello(h, rank, nranks, g, token.data())
                                                     : "closed before hello";
  } catch (const Error& e) {
    return e.what();
  }
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

  void run(PeerSockets& out) {
    while (missing_ > 0) {
      if (wait_for_connection())
        accept_one(out);
      else if (Clock::now() >= deadline_)
        fail_timeout();
    }
    for (auto& [q, v] : got_)
      if (!v.empty()) out.fds[q] = v;
  }

 private:
  // Polls for up to a second (less near the deadline), so the deadline is checked meanwhile.
  bool wait_for_connection() {
    pollfd p{l_.fd, POLLIN, 0};
    int rc = poll(&p, 1, static_cast<int>(std::max<long long>(0, std::min<long long>(left(deadline_).count(), 1000))));
    if (rc < 0 && errno != EINTR) fail_errno("poll", errno);
    return rc > 0;
  }

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

  // Anything that is not an awaited socket of this job is turned away and logged.
  void accept_one(PeerSockets& out) {
    net::SockAddr from;
    from.len = sizeof from.ss;
    int fd = accept4(l_.fd, reinterpret_cast<sockaddr*>(&from.ss), &from.len, SOCK_CLOEXEC);
    if (fd < 0) return;
    Hello h{};
    std::string why = receive_hello(fd, h, a_.rank, nranks_, g_, l_.token, deadline_);
    if (why.empty()) why = match(h);
    if (!why.empty()) {
      log::warn(log::Net, "tcp: rank {} refused a connection from {}: {}", a_.rank, from.str(), why);
      close(fd);
      return;
    }
    got_[h.from][h.sock] = fd;
    out.where[h.from] = from.str();
    --missing_;
  }

  const ConnectArgs& a_;
  const Geometry& g_;
  const int nranks_;
  const Listener& l_;
  const Clock::time_point deadline_;
  std::set<int> expect_;
  std::map<int, std::vector<int>> got_;  // peer -> fd per socket index (-1: not yet)
  size_t missing_ = 0;                   // sockets still to come
};

}  // namespace

Listener::~Listener() {
  if (fd >= 0) close(fd);
}

void listen_and_publish(const ConnectArgs& a, const Geometry& g, Listener& l) {
  LocalAddress local = choose_address(a.store->address());
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
