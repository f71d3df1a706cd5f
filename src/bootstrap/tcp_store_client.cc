#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "bootstrap/tcp_store.h"

namespace coral::bootstrap {

TcpStore::TcpStore(const net::SockAddr& server, const wire::Secret& secret, std::chrono::milliseconds timeout,
                   std::shared_ptr<CancelToken> cancel)
    : server_(server.str()), addr_(server), secret_(secret), cancel_(std::move(cancel)) {
  connect(net::Clock::now() + std::min<std::chrono::milliseconds>(timeout, kConnectLimit));
}

TcpStore::~TcpStore() { close_fd(); }

void TcpStore::close_fd() {
  if (fd_ < 0) return;
  if (cancel_) cancel_->detach(fd_);
  if (extra_) extra_->detach(fd_);
  close(fd_);
  fd_ = -1;
}

void TcpStore::connect(net::Clock::time_point deadline) {
  fd_ = net::connect_retry(addr_, deadline, cancel_ ? cancel_->flag() : nullptr);
  if (cancel_) cancel_->attach(fd_);
  if (extra_) extra_->attach(fd_);
  try {
    exchange(wire::Msg::Hello, "", Bytes(secret_.begin(), secret_.end()), deadline);
  } catch (...) {
    close_fd();
    throw;
  }
}

Bytes TcpStore::request(wire::Msg type, const std::string& key, const Bytes& value, std::chrono::milliseconds timeout,
                        CancelToken* extra) {
  if (key.size() > wire::kMaxKey || value.size() > wire::kMaxValue)
    fail(coralInvalidArgument, "store: key or value too large");
  std::lock_guard<std::mutex> lock(mu_);
  auto deadline = net::Clock::now() + timeout;
  auto check_cancelled = [&] {
    if (cancel_ && cancel_->cancelled())
      fail(coralRemoteError, "store " + server_ + ": given up (the communicator's creation was aborted)");
    if (extra && extra->cancelled())
      fail(coralRemoteError,
           "store " + server_ + ": wait for '" + key + "' given up (communicator aborted or revoked)");
  };
  check_cancelled();
  // The request's own token watches the shared connection only while this request uses it.
  struct Guard {
    TcpStore& s;
    CancelToken* extra;
    Guard(TcpStore& st, CancelToken* e) : s(st), extra(e) {
      s.extra_ = extra;
      if (extra && s.fd_ >= 0) extra->attach(s.fd_);
    }
    ~Guard() {
      // A cancel may have shut the connection down even though the reply came: the next
      // request, maybe another communicator's, connects afresh instead of failing on it.
      if (extra && extra->cancelled())
        s.close_fd();
      else if (extra && s.fd_ >= 0)
        extra->detach(s.fd_);
      s.extra_ = nullptr;
    }
  } guard(*this, extra);
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

void TcpStore::set_within(const std::string& key, const Bytes& value, std::chrono::milliseconds timeout) {
  request(wire::Msg::Set, key, value, timeout);
}

Bytes TcpStore::get(const std::string& key, std::chrono::milliseconds timeout) {
  return request(wire::Msg::Get, key, {}, timeout);
}

Bytes TcpStore::get_or_cancel(const std::string& key, std::chrono::milliseconds timeout, CancelToken& cancel) {
  return request(wire::Msg::Get, key, {}, timeout, &cancel);
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
