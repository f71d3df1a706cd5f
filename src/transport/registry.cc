#include <fmt/format.h>

#include "core/config.h"
#include "core/error.h"
#include "transport/shm/transport.h"
#include "transport/tcp/transport.h"
#include "transport/transport.h"

namespace coral::transport {

std::vector<Transport*> registry() {
  static shm::ShmTransport shm;
  static tcp::TcpTransport tcp;
  // Preference order: the first transport that can connect a pair carries it.
  const std::vector<Transport*> all = {&shm, &tcp};
  std::string want = config::get_string("CORAL_TRANSPORT");
  if (want == "auto") return all;
  std::vector<Transport*> out;
  size_t start = 0;
  while (start <= want.size()) {
    size_t comma = want.find(',', start);
    std::string name = want.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    Transport* hit = nullptr;
    for (Transport* t : all)
      if (name == t->name()) hit = t;
    if (!hit) {
      std::string known;
      for (Transport* t : all) known += std::string(known.empty() ? "" : ", ") + t->name();
      fail(coralInvalidArgument, fmt::format("CORAL_TRANSPORT names '{}', which this build does not have (it has: {})",
                                             name, known));
    }
    out.push_back(hit);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace coral::transport
