#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "bootstrap/tcp_store.h"

namespace coral::bootstrap {

void CancelToken::cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = true;
  for (int fd : fds_) shutdown(fd, SHUT_RDWR);  // wakes a wait in recv; the owner closes
}

void CancelToken::attach(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  fds_.push_back(fd);
  if (cancelled_) shutdown(fd, SHUT_RDWR);
}

void CancelToken::detach(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  std::erase(fds_, fd);
}

TcpStore::TcpStore(const net::SockAddr& server, const wire::Secret& secret, std::chrono::milliseconds timeout,
                   std::shared_ptr<CancelToken> cancel)
    : server_(server.str()), addr_(server), secret_(secret), cancel_(std::move(cancel)) {
  connect(net::Clock::now() + std::min<std::chrono::milliseconds>(timeout, kConnectLimit));
}

TcpStore::~TcpStore() { close_fd(); }

void TcpStore::close_fd() {
  if (fd_ < 0) return;
  if (cancel_) cancel_->detach(fd_);
  close(fd_);
  fd_ = -1;
}

void TcpStore::connect(net::Clock::time_point deadline) {
  fd_ = net::connect_retry(addr_, deadline, cancel_ ? cancel_->flag() : nullptr);
  if (cancel_) cancel_->attach(fd_);
  try {
    exchange(wire::Msg::Hello, "", Bytes(secret_.begin(), secret_.end()), deadline);
  } catch (...) {
    close_fd();
    throw;
  }
}

Bytes TcpStore::request(wire::Msg type, const std::string& key, const Bytes& value, std::chrono::milliseconds timeout) {
  if (key.size() > wire::kMaxKey || value.size() > wire::kMaxValue)
    fail(coralInvalidArgument, "store: key or value too large");
  std::lock_guard<std::mutex> lock(mu_);
  auto deadline = net::Clock::now() + timeout;
  auto check_cancelled = [&] {
    if (cancel_ && cancel_->cancelled())
      fail(coralRemoteError, "store " + server_ + ": given up (the communicator's creation was aborted)");
  };
  check_cancelled();
  // A wait that timed out closed the connection (its reply could still come); the store itself
  // is most likely alive, and a shrink after a peer's death needs it: connect afresh. Briefly: a
  // refusal now means the store is gone, and other users of this client wait on mu_.
  if (fd_ < 0) {
    try {
      connect(std::min(deadline, net::Clock::now() + std::chrono::seconds(10)));
    } catch (const Error& e) {
      fail(coralRemoteError, "store " + server_ + ": connecting again after an earlier failure: " + e.what());
    }
  }
  try {
    return exchange(type, key, value, deadline);
  } catch (const Error& e) {
    close_fd();  // a reply may still be in flight: the stream is out of step now
    check_cancelled();
    if (e.code() == coralTimeout) fail(coralTimeout, "store " + server_ + ": timed out waiting for '" + key + "'");
    throw;
  }
}

Bytes TcpStore::exchange(wire::Msg type, const std::string& key, const Bytes& value, net::Clock::time_point deadline) {
  wire::Header h{wire::kMagic,
                 static_cast<uint8_t>(type),
                 {},
                 static_cast<uint32_t>(key.size()),
                 static_cast<uint32_t>(value.size())};
  Bytes frame(sizeof h + key.size() + value.size());
  std::memcpy(frame.data(), &h, sizeof h);
  std::memcpy(frame.data() + sizeof h, key.data(), key.size());
  if (!value.empty()) std::memcpy(frame.data() + sizeof h + key.size(), value.data(), value.size());
  std::string what = "store " + server_ + ": ";
  if (!net::send_all(fd_, frame.data(), frame.size(), deadline)) fail(coralRemoteError, what + "connection closed");
  wire::Header r;
  if (!net::recv_all(fd_, &r, sizeof r, deadline))
    fail(coralRemoteError, what + "connection closed by the store (wrong job secret, or it exited)");
  std::string why = wire::check_header(r, true);
  if (!why.empty()) fail(coralRemoteError, what + "malformed reply: " + why);
  if (static_cast<wire::Msg>(r.type) == wire::Msg::Denied)
    fail(coralInvalidUsage, what + "refused this process (wrong job secret)");
  Bytes out(r.value_len);
  if (r.key_len != 0 || !net::recv_all(fd_, out.data(), out.size(), deadline))
    fail(coralRemoteError, what + "truncated reply");
  return out;
}

void TcpStore::set(const std::string& key, const Bytes& value) {
  request(wire::Msg::Set, key, value, std::chrono::seconds(60));
}

Bytes TcpStore::get(const std::string& key, std::chrono::milliseconds timeout) {
  return request(wire::Msg::Get, key, {}, timeout);
}

int64_t TcpStore::add(const std::string& key, int64_t delta) {
  Bytes d(8);
  std::memcpy(d.data(), &delta, 8);
  Bytes r = request(wire::Msg::Add, key, d, std::chrono::seconds(60));
  int64_t v = 0;
  if (r.size() == 8) std::memcpy(&v, r.data(), 8);
  return v;
}

}  // namespace coral::bootstrap
