#include "transport/cuda_ipc/memory.h"

#include <fmt/format.h>
#include <unistd.h>

#include "base/error.h"
#include "bootstrap/exchange.h"
#include "gpu/runtime.h"

namespace coral::transport::cuda_ipc {

std::string encode(const SlotsRecord& r) {
  bootstrap::Record rec("cuda_ipc record", -1);
  rec.add("pid", r.pid).add("device", r.device).add("ring_bytes", static_cast<uint64_t>(r.ring_bytes));
  rec.add("handle", r.handle_hex).add("addr", static_cast<uint64_t>(r.addr));
  const bootstrap::Bytes b = rec.encode();
  return std::string(b.begin(), b.end());
}

SlotsRecord decode(const std::string& s, int peer) {
  const bootstrap::Record rec =
      bootstrap::Record::decode(bootstrap::Bytes(s.begin(), s.end()), "cuda_ipc record", peer);
  SlotsRecord r;
  r.pid = static_cast<int>(rec.number("pid", 1, INT32_MAX));
  r.device = static_cast<int>(rec.number("device", 0, 1 << 16));
  r.ring_bytes = rec.unsigned_number("ring_bytes");
  r.handle_hex = rec.text("handle");
  r.addr = static_cast<uintptr_t>(rec.unsigned_number("addr"));
  if (r.handle_hex.size() != 128 || r.handle_hex.find_first_not_of("0123456789abcdef") != std::string::npos)
    rec.bad("the IPC handle is not 128 hex digits");
  return r;
}

DeviceSlots::~DeviceSlots() {
  for (auto& [q, p] : opened_) gpu::ipc_close(p);
  gpu::free_device(base_);
}

std::string DeviceSlots::create(size_t ring_bytes, int nrings) {
  ring_bytes_ = ring_bytes;
  base_ = static_cast<std::byte*>(gpu::alloc_device(ring_bytes * nrings));
  gpu::IpcHandle h = gpu::ipc_export(base_);
  std::string hex;
  for (unsigned char c : h) hex += fmt::format("{:02x}", c);
  return encode({getpid(), gpu::current_device(), ring_bytes, hex, reinterpret_cast<uintptr_t>(base_)});
}

void DeviceSlots::attach(int peer, int, const std::string& blob) {
  SlotsRecord r = decode(blob, peer);
  if (r.ring_bytes != ring_bytes_)
    fail(coralInvalidUsage, fmt::format("rank {} uses cuda_ipc rings of {} bytes but this rank {}: set "
                                        "CORAL_CUDA_IPC_* alike everywhere",
                                        peer, r.ring_bytes, ring_bytes_));
  if (r.pid == getpid()) {
    // Kernels here read and write that pointer directly: another device's memory needs peer
    // access first, or they fault (copies alone would not).
    gpu::enable_peer_access(r.device);
    peers_[peer] = reinterpret_cast<std::byte*>(r.addr);
    return;
  }
  gpu::IpcHandle h;
  for (size_t i = 0; i < h.size(); ++i)
    h[i] = static_cast<unsigned char>(std::stoi(r.handle_hex.substr(2 * i, 2), nullptr, 16));
  auto* p = static_cast<std::byte*>(gpu::ipc_open(h));
  peers_[peer] = opened_[peer] = p;
}

}  // namespace coral::transport::cuda_ipc
