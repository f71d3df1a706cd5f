#include <fmt/format.h>

#include "base/config.h"
#include "base/error.h"
#include "transport/shm/transport.h"
#include "transport/tcp/transport.h"
#include "transport/transport.h"
#ifdef CORAL_HAVE_UCX
#include "transport/ucx/transport.h"
#endif
#ifdef CORAL_HAVE_IBVERBS
#include "transport/ibverbs/transport.h"
#endif

namespace coral::transport {

std::vector<Transport*> built_transports() {
  static shm::ShmTransport shm;
  static tcp::TcpTransport tcp;
  std::vector<Transport*> all = {&shm};
#ifdef CORAL_HAVE_IBVERBS
  static ibverbs::IbvTransport ibv;
  all.push_back(&ibv);
#endif
#ifdef CORAL_HAVE_UCX
  static ucx::UcxTransport ucx;
  all.push_back(&ucx);
#endif
  all.push_back(&tcp);
  return all;
}

std::vector<Transport*> registry() {
  // Preference order: the first transport that can connect a pair carries it.
  std::vector<Transport*> all = built_transports();
  std::string want = config::get_string("CORAL_TRANSPORT");
  if (want == "auto") {
    std::erase_if(all, [](Transport* t) { return !t->available(); });
    // Between hosts UCX earns its place only with RDMA devices; over plain TCP Coral's own
    // transport is the leaner path.
#ifdef CORAL_HAVE_UCX
    if (!ucx::rdma_present()) std::erase_if(all, [](Transport* t) { return std::string(t->name()) == "ucx"; });
#endif
    return all;
  }
  std::vector<Transport*> out;
  for (const std::string& name : config::split(want, ',')) {
    Transport* hit = nullptr;
    for (Transport* t : all)
      if (name == t->name()) hit = t;
    if (!hit) {
      std::string known;
      for (Transport* t : all) known += std::string(known.empty() ? "" : ", ") + t->name();
      if (name == "cuda_ipc")
        fail(coralInvalidArgument, fmt::format("CORAL_TRANSPORT names 'cuda_ipc', which carries device buffers "
                                               "only and is used for them on its own; CORAL_TRANSPORT chooses "
                                               "among the host transports ({})", known));
      fail(coralInvalidArgument, fmt::format("CORAL_TRANSPORT names '{}', which this build does not have (it has: {})",
                                             name, known));
    }
    out.push_back(hit);
  }
  return out;
}

}  // namespace coral::transport
