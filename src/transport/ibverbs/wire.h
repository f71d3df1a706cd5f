// What two ranks exchange through the store to connect an RC queue pair: addressing (LID for
// InfiniBand, GID for RoCE), the queue pair number and starting PSN, and where the peer may
// RDMA-write (its receive ring and the word it reads our credits from). Decoding checks every
// field, so a record from another version or a corrupted store entry is refused by name.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace coral::transport::ibverbs {

constexpr uint16_t kQpInfoVersion = 1;

struct QpInfo {
  uint16_t lid = 0;
  uint8_t gid[16] = {};
  uint8_t port = 1;
  uint8_t mtu = 0;         // enum ibv_mtu: 1 (256) .. 5 (4096)
  uint32_t qpn = 0;        // 24 bits
  uint32_t psn = 0;        // 24 bits
  uint64_t ring_addr = 0;  // receive ring: nslots slots of slot_bytes
  uint32_t ring_rkey = 0;
  uint64_t credit_addr = 0;  // the word this rank reads the peer's released count from
  uint32_t credit_rkey = 0;
  uint64_t ctrl_addr = 0;  // control block: abort text and goodbye flags
  uint32_t ctrl_rkey = 0;
  uint32_t nslots = 0;
  uint32_t slot_bytes = 0;
};

std::vector<uint8_t> encode(const QpInfo& q);
// Throws coralRemoteError naming the bad field.
QpInfo decode(const std::vector<uint8_t>& bytes, int from_rank);

}  // namespace coral::transport::ibverbs
