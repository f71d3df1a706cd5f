#pragma once
#include <memory>
#include <string>

#include "transport/transport.h"

namespace coral::transport::shm {

class ShmTransport : public Transport {
 public:
  const char* name() const override { return "shm"; }
  const char* depth_knob() const override { return "CORAL_SHM_NSLOTS"; }
  bool can_connect(const PeerInfo& a, const PeerInfo& b) const override;
  std::unique_ptr<Domain> connect(const ConnectArgs& args) override;
};

// Where FIFO payloads live when not in the shared segment: cuda_ipc keeps the same FIFOs (control
// lines, credits, futex wake-ups, aborts, peer death) but puts the slots in device memory.
class SlotMemory {
 public:
  virtual ~SlotMemory() = default;
  // Allocates this rank's inbound rings (one per local rank, ring_bytes each) and returns what
  // peers need to reach them.
  virtual std::string create(size_t ring_bytes, int nrings) = 0;
  // Maps a peer's rings from what its create() returned.
  virtual void attach(int peer, int peer_pid, const std::string& blob) = 0;
  virtual std::byte* mine(int ring) = 0;
  virtual std::byte* theirs(int peer, int ring) = 0;
};

struct FifoOptions {
  // The knobs giving the slots' size and count.
  const char* slot_bytes_knob = "CORAL_SHM_SLOT_BYTES";
  const char* nslots_knob = "CORAL_SHM_NSLOTS";
  std::unique_ptr<SlotMemory> slots;  // null: slots in the segment, small messages inline, CMA
};

std::unique_ptr<Domain> connect_fifos(const ConnectArgs& args, FifoOptions opts);

}  // namespace coral::transport::shm
