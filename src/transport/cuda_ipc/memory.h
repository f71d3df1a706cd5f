// Device-memory FIFO slots for cuda_ipc: each rank allocates its inbound rings with cudaMalloc
// and publishes an IPC handle; peers open it, so a sender's kernel writes straight into the
// receiver's GPU memory (over NVLink or PCIe peer access, or within one GPU when ranks share it).
#pragma once
#include <map>
#include <string>

#include "transport/shm/transport.h"

namespace coral::transport::cuda_ipc {

class DeviceSlots : public shm::SlotMemory {
 public:
  ~DeviceSlots() override;
  std::string create(size_t ring_bytes, int nrings) override;
  void attach(int peer, int peer_pid, const std::string& blob) override;
  std::byte* mine(int ring) override { return base_ + ring * ring_bytes_; }
  std::byte* theirs(int peer, int ring) override { return peers_.at(peer) + ring * ring_bytes_; }

 private:
  std::byte* base_ = nullptr;
  size_t ring_bytes_ = 0;
  std::map<int, std::byte*> peers_;
  std::map<int, std::byte*> opened_;  // handles this process opened (closed at the end)
};

// The record a rank publishes: "<pid> <device> <ring bytes> <hex of the IPC handle>".
struct SlotsRecord {
  int pid = 0;
  int device = 0;
  size_t ring_bytes = 0;
  std::string handle_hex;
  // The owner's address, for ranks that are threads of one process (they cannot open their own
  // process's handles).
  uintptr_t addr = 0;
};
std::string encode(const SlotsRecord& r);
// Throws coralRemoteError naming what is wrong.
SlotsRecord decode(const std::string& s, int peer);

}  // namespace coral::transport::cuda_ipc
