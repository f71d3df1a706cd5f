#include "transport/cuda_ipc/transport.h"

#include "gpu/runtime.h"
#include "transport/cuda_ipc/memory.h"

namespace coral::transport::cuda_ipc {

bool CudaIpcTransport::available() const { return gpu::usable(); }

std::unique_ptr<Domain> CudaIpcTransport::connect(const ConnectArgs& args) {
  shm::FifoOptions o;
  o.slot_bytes_knob = "CORAL_CUDA_IPC_SLOT_BYTES";
  o.nslots_knob = "CORAL_CUDA_IPC_NSLOTS";
  o.slots = std::make_unique<DeviceSlots>();
  return shm::connect_fifos(args, std::move(o));
}

}  // namespace coral::transport::cuda_ipc
