#pragma once
#include "transport/transport.h"

namespace coral::transport::ibverbs {

// RDMA verbs (InfiniBand, RoCE) between hosts. Available only where a device is: without one it
// logs why once and the registry passes over it.
class IbvTransport : public Transport {
 public:
  const char* name() const override { return "ibverbs"; }
  const char* depth_knob() const override { return "CORAL_IB_NSLOTS"; }
  bool available() const override;
  bool can_connect(const PeerInfo&, const PeerInfo&) const override { return available(); }
  std::unique_ptr<Domain> connect(const ConnectArgs& args) override;
};

}  // namespace coral::transport::ibverbs
