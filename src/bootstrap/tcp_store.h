// TCP store: a server thread (hosted by coral-run, or by the process that called
// coralGetUniqueId) and a client. Clients must present the job secret first.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/socket.h"
#include "bootstrap/store.h"
#include "bootstrap/wire.h"

namespace coral::bootstrap {

class TcpStoreServer {
 public:
  // Binds addr (port 0 = ephemeral). With exit_when_idle the thread ends a few seconds after
  // every client that authenticated has disconnected (or when none came within idle_timeout).
  TcpStoreServer(const net::SockAddr& addr, const wire::Secret& secret, bool exit_when_idle,
                 std::chrono::milliseconds idle_timeout);
  // Serves on listen_fd, a socket already bound and listening, which the server then owns.
  TcpStoreServer(int listen_fd, const wire::Secret& secret, bool exit_when_idle,
                 std::chrono::milliseconds idle_timeout);
  ~TcpStoreServer();
  int port() const { return port_; }
  void stop();
  void wait();  // until the loop ends by itself (exit_when_idle)
  // Connections refused so far (bad magic, wrong secret, malformed frames).
  int refused() const { return refused_.load(); }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> refused_{0};
};

// Starts a detached server that lives until idle (used by coralGetUniqueId).
int start_detached_store_server(const net::SockAddr& addr, const wire::Secret& secret,
                                std::chrono::milliseconds idle_timeout);

// Serves a store on addr's port for the rest of the process: the rank 0 side of a rendezvous at
// a known address (MASTER_ADDR/MASTER_PORT). A later call for the same port
// and secret finds it served already, so one process may create many communicators there; a
// port another process holds fails with the bind error.
void serve_store_at(const net::SockAddr& addr, const wire::Secret& secret);

class TcpStore : public Store {
 public:
  // Connecting waits for the server at most min(timeout, kConnectLimit): it is up by the time
  // the ranks know its address, or about to be (a launcher's), so a refusal that long means it
  // is gone, whatever the timeout of the waits.
  static constexpr std::chrono::seconds kConnectLimit{300};
  TcpStore(const net::SockAddr& server, const wire::Secret& secret, std::chrono::milliseconds timeout,
           std::shared_ptr<CancelToken> cancel = nullptr);
  ~TcpStore() override;
  void set(const std::string& key, const Bytes& value) override;
  void set_within(const std::string& key, const Bytes& value, std::chrono::milliseconds timeout) override;
  Bytes get(const std::string& key, std::chrono::milliseconds timeout) override;
  Bytes get_or_cancel(const std::string& key, std::chrono::milliseconds timeout, CancelToken& cancel) override;
  int64_t add(const std::string& key, int64_t delta) override;
  std::string address() const override { return server_; }

 private:
  // extra: a token guarding this request alone (a communicator's, where the client is shared).
  Bytes request(wire::Msg type, const std::string& key, const Bytes& value, std::chrono::milliseconds timeout,
                CancelToken* extra = nullptr);
  // Under mu_: connects and presents the secret; sends one frame and reads its reply; closes.
  void connect(net::Clock::time_point deadline);
  Bytes exchange(wire::Msg type, const std::string& key, const Bytes& value, net::Clock::time_point deadline);
  void close_fd();
  std::mutex mu_;
  int fd_ = -1;
  std::string server_;
  net::SockAddr addr_;
  wire::Secret secret_;
  std::shared_ptr<CancelToken> cancel_;  // the client's own: every request
  CancelToken* extra_ = nullptr;         // under mu_: the current request's
};

}  // namespace coral::bootstrap
