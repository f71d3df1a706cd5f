#include <fmt/format.h>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "transport/cuda_ipc/transport.h"
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
                                               "among the host transports ({})",
                                               known));
      fail(coralInvalidArgument,
           fmt::format("CORAL_TRANSPORT names '{}', which this build does not have (it has: {})", name, known));
    }
    out.push_back(hit);
  }
  return out;
}

std::vector<Transport*> device_transports() {
  static cuda_ipc::CudaIpcTransport ipc;
  return {&ipc};
}

LinkSet connect_all(const ConnectArgs& args, Memory memory, int min_in_flight) {
  const int nranks = static_cast<int>(args.peers->size());
  const std::vector<PeerInfo>& peers = *args.peers;
  LinkSet set;
  set.links.assign(nranks, nullptr);
  set.domain_of.assign(nranks, nullptr);
  set.transport_of.assign(nranks, "");
  set.transport_of[args.rank] = "self";
  std::vector<int> left = args.targets;
  const std::vector<Transport*> order = memory == Memory::Device ? device_transports() : registry();
  for (Transport* t : order) {
    if (left.empty()) break;
    ConnectArgs ca = args;
    ca.prefix = args.prefix + "/" + t->name();
    ca.targets.clear();
    for (int q : left)
      if (t->can_connect(peers[args.rank], peers[q])) ca.targets.push_back(q);
    if (ca.targets.empty()) continue;
    std::unique_ptr<Domain> dom = t->connect(ca);
    for (int q : ca.targets) {
      Link* l = dom->link(q);
      if (l->max_in_flight() < min_in_flight)
        fail(coralInvalidArgument, fmt::format("{} allows {} message(s) in flight; schedules need {} (raise {})",
                                               t->name(), l->max_in_flight(), min_in_flight, t->depth_knob()));
      set.links[q] = l;
      set.domain_of[q] = dom.get();
      set.transport_of[q] = t->name();
      set.max_message = std::min(set.max_message, l->max_message());
    }
    std::erase_if(left, [&](int q) { return set.links[q] != nullptr; });
    log::info(log::Init, "{} connects {} peers", t->name(), ca.targets.size());
    if (dom->needs_polling()) set.polled.push_back(dom.get());
    if (dom->knows_cpus()) set.cpu_gate = dom.get();
    set.domains.push_back(std::move(dom));
  }
  if (memory == Memory::Host && !left.empty()) {
    const int q = left.front();
    std::string missing;
    for (Transport* t : order)
      if (!t->available())
        missing += fmt::format("; {} is not available on this host (CORAL_DEBUG=INFO says why)", t->name());
    fail(coralSystemError, fmt::format("no transport connects rank {} (host {}) with rank {} (host {}); "
                                       "CORAL_TRANSPORT={}{}",
                                       args.rank, peers[args.rank].host_id, q, peers[q].host_id,
                                       config::get_string("CORAL_TRANSPORT"), missing));
  }
  return set;
}

}  // namespace coral::transport
