#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "base/error.h"
#include "base/log.h"
#include "bootstrap/tcp_store.h"

namespace coral::bootstrap {

namespace {

struct Client {
  int fd;
  std::string peer;
  bool authed = false;
  net::Clock::time_point since;
  std::vector<uint8_t> in;
  std::vector<uint8_t> out;
  std::vector<std::string> waiting;  // keys of GETs not yet answered, in order
};

constexpr auto kAuthWindow = std::chrono::seconds(10);
// An idle server outlives its last client this long: a client whose connection a cancelled wait
// shut down reconnects on its next request, and may be the last one left.
constexpr auto kIdleLinger = std::chrono::seconds(5);

}  // namespace

struct TcpStoreServer::Impl {
  int listen_fd = -1;
  int wake = -1;  // an eventfd: stop() ends the loop (one descriptor, where a pipe takes two)
  wire::Secret secret;
  bool exit_when_idle;
  std::chrono::milliseconds idle_timeout;
  std::atomic<int>* refused;
  std::map<std::string, Bytes> data;
  std::vector<Client> clients;
  bool had_client = false;
  log::Throttle refusals;  // strangers may connect at any rate: the log must not flood

  void queue(Client& c, wire::Msg type, const Bytes& value) {
    wire::Header h{wire::kMagic, static_cast<uint8_t>(type), {}, 0, static_cast<uint32_t>(value.size())};
    const uint8_t* hp = reinterpret_cast<const uint8_t*>(&h);
    c.out.insert(c.out.end(), hp, hp + sizeof h);
    c.out.insert(c.out.end(), value.begin(), value.end());
  }

  void answer_waiters() {
    for (Client& c : clients) {
      // Replies must keep request order, so only the oldest pending GET can be answered.
      while (!c.waiting.empty() && data.count(c.waiting.front())) {
        queue(c, wire::Msg::Value, data[c.waiting.front()]);
        c.waiting.erase(c.waiting.begin());
      }
    }
  }

  // Returns false when the client must be dropped.
  bool handle(Client& c, const wire::Header& h, const std::string& key, const Bytes& value) {
    auto type = static_cast<wire::Msg>(h.type);
    if (!c.authed) {
      if (type != wire::Msg::Hello || !wire::secrets_equal(value.data(), secret.data())) {
        if (const uint64_t n = refusals.admit())
          log::warn(log::Boot, "store: refused connection from {}: {}{}", c.peer,
                    type == wire::Msg::Hello ? "wrong job secret" : "no hello", log::held_back(n));
        queue(c, wire::Msg::Denied, {});
        refused->fetch_add(1);
        return false;
      }
      c.authed = true;
      had_client = true;
      queue(c, wire::Msg::Ok, {});
      return true;
    }
    switch (type) {
      case wire::Msg::Set:
        data[key] = value;
        queue(c, wire::Msg::Ok, {});
        answer_waiters();
        return true;
      case wire::Msg::Get:
        c.waiting.push_back(key);
        answer_waiters();
        return true;
      case wire::Msg::Add: {
        // Counters wrap (two's complement) instead of overflowing a signed add, which is
        // undefined: a peer's delta is whatever it sent.
        uint64_t v = 0, d = 0;
        std::memcpy(&d, value.data(), 8);
        Bytes& b = data[key];
        if (b.size() == 8) std::memcpy(&v, b.data(), 8);
        v += d;
        b.assign(8, 0);
        std::memcpy(b.data(), &v, 8);
        queue(c, wire::Msg::Value, b);
        answer_waiters();
        return true;
      }
      default:
        return false;
    }
  }

  // Parses every complete frame in c.in. Returns false to drop the client.
  bool parse(Client& c) {
    size_t pos = 0;
    while (c.in.size() - pos >= sizeof(wire::Header)) {
      wire::Header h;
      std::memcpy(&h, c.in.data() + pos, sizeof h);
      std::string why = wire::check_header(h, false);
      // Before the hello only a hello may come: anything else is refused on its header, before
      // its (up to kMaxValue) bytes are buffered for a peer that never proved it is in the job.
      if (why.empty() && !c.authed && static_cast<wire::Msg>(h.type) != wire::Msg::Hello) why = "no hello";
      if (!why.empty()) {
        if (const uint64_t n = refusals.admit())
          log::warn(log::Boot, "store: refused connection from {}: {}{}", c.peer, why, log::held_back(n));
        if (!c.authed) refused->fetch_add(1);
        return false;
      }
      size_t total = sizeof h + h.key_len + h.value_len;
      if (c.in.size() - pos < total) break;
      const uint8_t* p = c.in.data() + pos + sizeof h;
      std::string key(reinterpret_cast<const char*>(p), h.key_len);
      Bytes value(p + h.key_len, p + h.key_len + h.value_len);
      pos += total;
      if (!handle(c, h, key, value)) return false;
    }
    c.in.erase(c.in.begin(), c.in.begin() + static_cast<long>(pos));
    return true;
  }

  bool read_client(Client& c) {
    uint8_t buf[65536];
    while (true) {
      ssize_t k = recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
      if (k > 0) {
        c.in.insert(c.in.end(), buf, buf + k);
        if (!parse(c)) return false;
        continue;
      }
      if (k == 0) return false;
      return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    }
  }

  bool write_client(Client& c) {
    while (!c.out.empty()) {
      ssize_t k = send(c.fd, c.out.data(), c.out.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      if (k > 0) {
        c.out.erase(c.out.begin(), c.out.begin() + k);
        continue;
      }
      return k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
    }
    return true;
  }

  void accept_all() {
    while (true) {
      net::SockAddr a;
      a.len = sizeof a.ss;
      int fd = accept4(listen_fd, reinterpret_cast<sockaddr*>(&a.ss), &a.len, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) return;
      net::set_nodelay(fd);
      clients.push_back(Client{fd, a.str(), false, net::Clock::now(), {}, {}, {}});
    }
  }

  void run() {
    auto started = net::Clock::now(), idle_since = started;
    while (true) {
      std::vector<pollfd> fds;
      fds.push_back({wake, POLLIN, 0});
      fds.push_back({listen_fd, POLLIN, 0});
      for (Client& c : clients) fds.push_back({c.fd, static_cast<short>(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
      int rc = poll(fds.data(), fds.size(), 200);
      if (rc < 0 && errno != EINTR) break;
      if (fds[0].revents) break;
      if (fds[1].revents & POLLIN) accept_all();
      auto now = net::Clock::now();
      for (size_t i = 0; i < clients.size(); ++i) {
        Client& c = clients[i];
        short re = i + 2 < fds.size() ? fds[i + 2].revents : 0;
        bool keep = true;
        if (re & (POLLIN | POLLHUP | POLLERR)) keep = read_client(c);
        if (!c.authed && now - c.since > kAuthWindow) {
          if (const uint64_t n = refusals.admit())
            log::warn(log::Boot, "store: dropped {}: no job secret within 10 s{}", c.peer, log::held_back(n));
          refused->fetch_add(1);
          keep = false;
        }
        keep = write_client(c) && keep;
        if (!keep) {
          close(c.fd);
          c.fd = -1;
        }
      }
      std::erase_if(clients, [](const Client& c) { return c.fd < 0; });
      if (exit_when_idle) {
        bool any_authed = false;
        for (Client& c : clients) any_authed |= c.authed;
        if (any_authed || !had_client) idle_since = now;
        if (had_client && now - idle_since > kIdleLinger) break;
        if (!had_client && now - started > idle_timeout) break;
      }
    }
    for (Client& c : clients) close(c.fd);
    clients.clear();
  }
};

TcpStoreServer::TcpStoreServer(const net::SockAddr& addr, const wire::Secret& secret, bool exit_when_idle,
                               std::chrono::milliseconds idle_timeout)
    : TcpStoreServer(net::listen_on(addr), secret, exit_when_idle, idle_timeout) {}

TcpStoreServer::TcpStoreServer(int listen_fd, const wire::Secret& secret, bool exit_when_idle,
                               std::chrono::milliseconds idle_timeout)
    : impl_(new Impl) {
  impl_->listen_fd = listen_fd;
  net::set_nonblocking(impl_->listen_fd, true);
  impl_->wake = eventfd(0, EFD_CLOEXEC);
  if (impl_->wake < 0) fail_errno("eventfd", errno);
  impl_->secret = secret;
  impl_->exit_when_idle = exit_when_idle;
  impl_->idle_timeout = idle_timeout;
  impl_->refused = &refused_;
  port_ = net::local_address(impl_->listen_fd).port();
  thread_ = std::thread([this] { impl_->run(); });
}

void TcpStoreServer::stop() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    (void)!write(impl_->wake, &one, sizeof one);
    thread_.join();
  }
}

void TcpStoreServer::wait() {
  if (thread_.joinable()) thread_.join();
}

TcpStoreServer::~TcpStoreServer() {
  stop();
  close(impl_->listen_fd);
  close(impl_->wake);
}

int start_detached_store_server(const net::SockAddr& addr, const wire::Secret& secret,
                                std::chrono::milliseconds idle_timeout) {
  // The server object must outlive the caller's scope; it deletes itself when its loop ends.
  auto* server = new TcpStoreServer(addr, secret, true, idle_timeout);
  int port = server->port();
  std::thread([server] {
    server->wait();  // the loop ends by itself when idle
    delete server;
  }).detach();
  return port;
}

void serve_store_at(const net::SockAddr& addr, const wire::Secret& secret) {
  if (addr.port() == 0) fail(coralInvalidArgument, "a store served at a known address needs a port");
  static std::mutex mu;
  // Never freed: these servers last as long as the process, and a later communicator of the
  // same job may need them again.
  static std::map<int, std::pair<wire::Secret, TcpStoreServer*>> serving;
  std::lock_guard<std::mutex> lock(mu);
  auto it = serving.find(addr.port());
  if (it != serving.end()) {
    if (!wire::secrets_equal(it->second.first.data(), secret.data()))
      fail(coralInvalidUsage, "this process already serves another job's store on port " + std::to_string(addr.port()));
    return;
  }
  serving[addr.port()] = {secret, new TcpStoreServer(addr, secret, false, std::chrono::milliseconds(0))};
}

}  // namespace coral::bootstrap
