// Two or more ranks as threads, connected by one named transport, for the transport suites.
#pragma once
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/host_id.h"
#include "bootstrap/mem_store.h"
#include "core/progress.h"
#include "transport/transport.h"

namespace conformance {

using namespace coral;

// The communicator's own monitor over one domain: ends a wait on a failed or aborting peer, or
// after timeout_s.
// A recorder of its own names the operations in its errors, as a communicator's does.
struct MonitorLinks {
  std::vector<transport::Domain*> domain_of, polled;
  std::unique_ptr<FlightRecorder> recorder = std::make_unique<FlightRecorder>(-1, 1);
  FlightPeers flight{recorder.get(), [r = recorder.get()](int) { return FlightStatus::read(r->board()); }, {}};
};
class Monitor : private MonitorLinks, public PeerMonitor {
 public:
  static constexpr int kMaxRanks = 64;
  Monitor(transport::Domain* d, double timeout_s)
      : MonitorLinks{std::vector<transport::Domain*>(kMaxRanks, d), {}},
        PeerMonitor(-1, domain_of.data(), polled, timeout_s, 100, 10, nullptr, flight) {}
};

inline transport::Transport* find(const std::string& name) {
  for (transport::Transport* t : transport::built_transports())
    if (name == t->name()) return t;
  return nullptr;
}

// Sets an environment variable for a scope.
struct Env {
  std::string name;
  Env(const char* n, const char* v) : name(n) { setenv(n, v, 1); }
  ~Env() { unsetenv(name.c_str()); }
};

// "tcp:threads" is tcp with its socket I/O on 2 helper threads over 3 sockets per pair.
struct Variant {
  std::string transport;
  std::vector<std::pair<std::string, std::string>> env;
  explicit Variant(const std::string& name) : transport(name.substr(0, name.find(':'))) {
    if (name == "tcp:threads") env = {{"CORAL_SOCKET_NTHREADS", "2"}, {"CORAL_SOCKET_NSOCKS", "3"}};
    for (auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
  }
  ~Variant() {
    for (auto& [k, v] : env) unsetenv(k.c_str());
  }
};

// Connects p thread ranks all-to-all over transport `name`; body(rank, domain) runs on each;
// returns the first error (rank-prefixed) or "".
inline std::string on_ranks(const std::string& name, int p, const std::function<void(int, transport::Domain&)>& body,
                            std::shared_ptr<bootstrap::Store> store = std::make_shared<bootstrap::MemStore>()) {
  std::vector<transport::PeerInfo> peers;
  for (int r = 0; r < p; ++r) peers.push_back({r, static_cast<int>(getpid()), host_id()});
  Variant variant(name);
  std::vector<std::string> errors(p);
  std::vector<std::thread> threads;
  for (int r = 0; r < p; ++r)
    threads.emplace_back([&, r] {
      try {
        transport::Transport* t = find(variant.transport);
        if (!t) fail(coralInternalError, "no transport " + name);
        transport::ConnectArgs a{store.get(), "conf/" + name, &peers, r, {}, 20.0};
        for (int q = 0; q < p; ++q)
          if (q != r) a.targets.push_back(q);
        auto d = t->connect(a);
        body(r, *d);
      } catch (const std::exception& e) {
        errors[r] = "rank " + std::to_string(r) + ": " + e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (!e.empty()) return e;
  return "";
}

}  // namespace conformance
