#pragma once
#include "transport/transport.h"

namespace coral::transport::tcp {

// Every pair of ranks can talk TCP; the registry asks it after the same-host transports.
class TcpTransport : public Transport {
 public:
  const char* name() const override { return "tcp"; }
  const char* depth_knob() const override { return "CORAL_SOCKET_NSLOTS"; }
  bool can_connect(const PeerInfo&, const PeerInfo&) const override { return true; }
  std::unique_ptr<Domain> connect(const ConnectArgs& args) override;
};

}  // namespace coral::transport::tcp
