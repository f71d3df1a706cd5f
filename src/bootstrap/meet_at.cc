#include "bootstrap/meet_at.h"

#include <sys/socket.h>

#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "base/error.h"
#include "base/socket.h"
#include "bootstrap/tcp_store.h"

namespace coral::bootstrap {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// What rank 0 hands out: the fresh store's id, then the communicator's size.
Bytes offer(const UniqueId& id, int nranks) {
  Bytes v(CORAL_UNIQUE_ID_BYTES + sizeof(int32_t));
  char enc[CORAL_UNIQUE_ID_BYTES];
  encode_unique_id(id, enc);
  std::memcpy(v.data(), enc, sizeof enc);
  const int32_t n = nranks;
  std::memcpy(v.data() + sizeof enc, &n, sizeof n);
  return v;
}

UniqueId serve(const UniqueId& at, int nranks, milliseconds timeout, const std::shared_ptr<CancelToken>& cancel) {
  const net::SockAddr where = net::resolve(at.addr);
  const bool v6 = where.ss.ss_family == AF_INET6;
  // The previous communicator's meeting may still hold the port for a moment (a process that
  // sat it out can be this one's rank 0): a port held longer is someone else's.
  std::unique_ptr<TcpStoreServer> server;
  for (const auto give_up = Clock::now() + std::min(timeout, milliseconds(2000)); !server;) {
    try {
      server = std::make_unique<TcpStoreServer>(net::any_address(v6, where.port()), at.secret, false, milliseconds(0));
    } catch (const Error& e) {
      if (Clock::now() >= give_up || (cancel && cancel->cancelled()))
        fail(e.code(), fmt::format("rank 0 cannot serve the rendezvous at {}: {}", at.addr, e.what()));
      std::this_thread::sleep_for(milliseconds(20));
    }
  }
  // The communicator's own store, at the host the others reached this one at (the agreed
  // address, not a guess that may be another interface or family); it must outlive the meeting.
  const UniqueId mine = fresh_store(2 * timeout, at.addr.substr(0, at.addr.rfind(':')), v6);
  if (nranks == 1) return mine;  // the port was free: nobody else to wait for
  TcpStore client(net::resolve(v6 ? "::1" : "127.0.0.1", where.port()), at.secret, timeout, cancel);
  client.set("id", offer(mine, nranks));
  try {
    client.get("all", timeout);  // the last rank to take the id says so
  } catch (const Error& e) {
    if (e.code() != coralTimeout) throw;
    fail(coralTimeout, fmt::format("rank 0 served the rendezvous at {} for {} s, and {} of the other {} ranks came",
                                   at.addr, timeout.count() / 1000, client.add("claimed", 0), nranks - 1));
  }
  return mine;  // the server stops here: the port is free for the next communicator
}

UniqueId join(const UniqueId& at, int nranks, int rank, milliseconds timeout,
              const std::shared_ptr<CancelToken>& cancel) {
  const auto deadline = Clock::now() + timeout;
  std::string last = "nobody listened there";
  for (;;) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left <= milliseconds(0))
      fail(coralTimeout, fmt::format("rank {}: no rank 0 of a communicator of {} ranks served the rendezvous at {} "
                                     "within {} s (last: {})",
                                     rank, nranks, at.addr, timeout.count() / 1000, last));
    try {
      TcpStore client(net::resolve(at.addr), at.secret, left, cancel);
      const Bytes v = client.get("id", left);
      int32_t n = 0;
      if (v.size() != CORAL_UNIQUE_ID_BYTES + sizeof n) fail(coralInternalError, "the rendezvous' offer is malformed");
      std::memcpy(&n, v.data() + CORAL_UNIQUE_ID_BYTES, sizeof n);
      // Another communicator's rendezvous, not yet over: wait for ours.
      if (n != nranks) {
        last = fmt::format("a communicator of {} ranks was meeting there", n);
      } else if (client.add(fmt::format("rank/{}", rank), 1) != 1) {
        last = fmt::format("a communicator whose rank {} had come already was meeting there", rank);
      } else {
        if (client.add("claimed", 1) == nranks - 1) client.set("all", {});
        char enc[CORAL_UNIQUE_ID_BYTES];
        std::memcpy(enc, v.data(), sizeof enc);
        return decode_unique_id(enc);
      }
    } catch (const Error& e) {
      if (cancel && cancel->cancelled()) throw;
      last = e.what();  // rank 0 not there yet, or a meeting that ended under us
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
}

}  // namespace

UniqueId fresh_store(milliseconds idle_timeout, const std::string& host, bool v6) {
  UniqueId id;
  id.secret = wire::random_secret();
  const int port = start_detached_store_server(net::any_address(v6, 0), id.secret, idle_timeout);
  std::string h = host;
  if (h.empty()) {
    h = net::default_host_address();
    if (h.find(':') != std::string::npos) h = "[" + h + "]";
  }
  id.addr = h + ":" + std::to_string(port);
  return id;
}

UniqueId meet_at(const UniqueId& at, int nranks, int rank, milliseconds timeout, std::shared_ptr<CancelToken> cancel) {
  return rank == 0 ? serve(at, nranks, timeout, cancel) : join(at, nranks, rank, timeout, cancel);
}

}  // namespace coral::bootstrap
