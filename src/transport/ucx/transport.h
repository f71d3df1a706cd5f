#pragma once
#include "transport/transport.h"

namespace coral::transport::ucx {

// UCP tagged messages between any two ranks; UCX picks its own wire (RDMA verbs where it finds
// a device, else TCP or shared memory; UCX_TLS narrows it).
class UcxTransport : public Transport {
 public:
  const char* name() const override { return "ucx"; }
  const char* depth_knob() const override { return "CORAL_UCX_NSLOTS"; }
  bool can_connect(const PeerInfo&, const PeerInfo&) const override { return true; }
  std::unique_ptr<Domain> connect(const ConnectArgs& args) override;
};

// Whether this host has RDMA devices: only then does the automatic choice prefer UCX to Coral's
// own TCP transport (over plain TCP, UCX has nothing to add and measured slower).
bool rdma_present();

}  // namespace coral::transport::ucx
