#include "transport/transport.h"

#include <fmt/format.h>

#include "transport/net_wait.h"

#include "core/error.h"

namespace coral::transport {

void Link::send_direct(const void*, size_t, uint64_t, WaitMonitor&) {
  fail(coralInternalError, "send_direct on a link without single-copy support");
}

void Link::send_board(const std::byte*, size_t, uint64_t, WaitMonitor&) {
  fail(coralInternalError, "send_board on a link without a board");
}

std::string lost_ranks(const std::vector<int>& lost, const std::string& why) {
  std::string list;
  for (int q : lost) list += (list.empty() ? "" : ", ") + std::to_string(q);
  return fmt::format("lost rank{} {} ({})", lost.size() > 1 ? "s" : "", list, why);
}

}  // namespace coral::transport
