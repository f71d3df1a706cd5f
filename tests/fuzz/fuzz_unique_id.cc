// Fuzz target for coralUniqueId bytes, which users copy between processes by hand: decode or
// throw coral::Error(coralInvalidArgument); what decodes names a host:port without a lookup and
// encodes back to the same id.
#include <coral/coral.h>

#include <cstdint>
#include <cstring>

#include "base/error.h"
#include "bootstrap/unique_id.h"

using namespace coral::bootstrap;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  char raw[CORAL_UNIQUE_ID_BYTES] = {};
  // Inputs shorter than an id start from a valid one, so the checks past the magic are reached.
  if (size < sizeof raw) encode_unique_id({"127.0.0.1:29500", {}}, raw);
  std::memcpy(raw, data, size < sizeof raw ? size : sizeof raw);
  UniqueId id;
  try {
    id = decode_unique_id(raw);
  } catch (const coral::Error& e) {
    if (e.code() != coralInvalidArgument) __builtin_trap();
    return 0;
  }
  if (id.addr.empty() || id.addr.size() > kMaxIdAddr || id.addr.find(':') == std::string::npos) __builtin_trap();
  char again[CORAL_UNIQUE_ID_BYTES];
  encode_unique_id(id, again);
  const UniqueId back = decode_unique_id(again);
  if (back.addr != id.addr || back.secret != id.secret) __builtin_trap();
  return 0;
}
