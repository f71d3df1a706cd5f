// Fuzz target for the cuda_ipc slots record a peer publishes through the store (pid, device,
// ring size, IPC handle, address): decode or throw coral::Error; what decodes re-encodes to the
// same record, and its handle is the 128 hex digits attach() converts byte by byte.
#include <cstdint>
#include <string>

#include "base/error.h"
#include "transport/cuda_ipc/memory.h"

using namespace coral::transport::cuda_ipc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string blob(reinterpret_cast<const char*>(data), size);
  SlotsRecord r;
  try {
    r = decode(blob, 2);
  } catch (const coral::Error&) {
    return 0;
  }
  if (r.handle_hex.size() != 128 || r.handle_hex.find_first_not_of("0123456789abcdef") != std::string::npos)
    __builtin_trap();
  if (r.pid < 1 || r.device < 0) __builtin_trap();
  SlotsRecord again;
  try {
    again = decode(encode(r), 2);
  } catch (const coral::Error&) {
    __builtin_trap();
  }
  if (again.pid != r.pid || again.device != r.device || again.ring_bytes != r.ring_bytes ||
      again.handle_hex != r.handle_hex || again.addr != r.addr)
    __builtin_trap();
  return 0;
}
