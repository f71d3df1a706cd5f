// How TcpDomain sets up its connections (connect_all): every rank listens and publishes its
// address in the store; lower ranks dial the higher ones and send a hello on each socket; higher
// ranks accept, check each hello and match the socket to its peer and index.
#pragma once
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "bootstrap/wire.h"
#include "transport/tcp/wire.h"
#include "transport/transport.h"

namespace coral::transport::tcp {

using Clock = std::chrono::steady_clock;

// The listening socket (closed with this object) and the token dialers must present.
struct Listener {
  int fd = -1;
  bootstrap::wire::Secret token{};
  Listener() = default;
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  ~Listener();
};

// The connected sockets: peer -> fd per socket index, and where each peer was reached.
struct PeerSockets {
  std::map<int, std::vector<int>> fds;
  std::map<int, std::string> where;
};

// Opens the listener on the chosen interface and publishes "addr token nsocks slot nslots".
void listen_and_publish(const ConnectArgs& a, const Geometry& g, Listener& l);
// Connects nsocks sockets to each target above this rank, sending each socket's hello at once.
void dial_peers(const ConnectArgs& a, const Geometry& g, Clock::time_point deadline, PeerSockets& out);
// Accepts every socket of the targets below this rank; other connections are refused and logged.
void accept_peers(const ConnectArgs& a, const Geometry& g, int nranks, const Listener& l, Clock::time_point deadline,
                  PeerSockets& out);

}  // namespace coral::transport::tcp
