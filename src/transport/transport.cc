#include "transport/transport.h"

#include "core/error.h"

namespace coral::transport {

void Link::send_direct(const void*, size_t, uint64_t, WaitMonitor&) {
  fail(coralInternalError, "send_direct on a link without single-copy support");
}

}  // namespace coral::transport
