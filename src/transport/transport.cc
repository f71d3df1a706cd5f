#include "transport/transport.h"

#include <fmt/format.h>

#include "transport/net_wait.h"

#include "base/error.h"

namespace coral::transport {

void Link::send_direct(const void*, size_t, uint64_t, WaitMonitor&) {
  fail(coralInternalError, "send_direct on a link without single-copy support");
}

Message Link::post_peek(WaitMonitor&) { fail(coralInternalError, "post_peek on a link without posts"); }

void Link::post_release() { fail(coralInternalError, "post_release on a link without posts"); }

std::string lost_ranks(const std::vector<int>& lost, const std::string& why) {
  std::string list;
  for (int q : lost) list += (list.empty() ? "" : ", ") + std::to_string(q);
  return fmt::format("lost rank{} {} ({})", lost.size() > 1 ? "s" : "", list, why);
}

}  // namespace coral::transport
