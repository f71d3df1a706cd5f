// cuda_ipc: links between ranks of one host whose buffers are on GPUs. The shared-memory FIFOs
// carry control (sequence numbers, credits, wake-ups, aborts, peer death); payload slots are
// device memory reached through CUDA IPC. Several ranks may share one GPU.
#pragma once
#include "transport/transport.h"

namespace coral::transport::cuda_ipc {

class CudaIpcTransport : public Transport {
 public:
  const char* name() const override { return "cuda_ipc"; }
  const char* depth_knob() const override { return "CORAL_CUDA_IPC_NSLOTS"; }
  bool device_memory() const override { return true; }
  bool available() const override;
  bool can_connect(const PeerInfo& a, const PeerInfo& b) const override { return a.host_id == b.host_id; }
  std::unique_ptr<Domain> connect(const ConnectArgs& args) override;
};

}  // namespace coral::transport::cuda_ipc
