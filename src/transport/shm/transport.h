#pragma once
#include "transport/transport.h"

namespace coral::transport::shm {

class ShmTransport : public Transport {
 public:
  const char* name() const override { return "shm"; }
  bool can_connect(const PeerInfo& a, const PeerInfo& b) const override;
  std::unique_ptr<Domain> connect(const ConnectArgs& args) override;
};

}  // namespace coral::transport::shm
