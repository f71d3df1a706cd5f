// The RDMA links of one communicator: one device context, protection domain, a send and a
// receive completion queue shared by every queue pair, the registration cache for direct sends,
// and a control block peers write aborts and goodbyes into. Waits poll the completion queues.
#pragma once
#include <infiniband/verbs.h>
#include <sched.h>

#include <map>
#include <memory>
#include <mutex>

#include "base/wait.h"
#include "transport/ibverbs/connection.h"
#include "transport/net_wait.h"

namespace coral::transport::ibverbs {

// Registers with a protection domain (the cache's registrar).
class PdRegistrar : public Registrar {
 public:
  explicit PdRegistrar(ibv_pd* pd) : pd_(pd) {}
  Registration reg(uintptr_t addr, size_t len) override;
  void dereg(const Registration& r) override;

 private:
  ibv_pd* pd_;
};

class IbvDomain : public Domain {
 public:
  IbvDomain(const ConnectArgs& a, ibv_device* dev);
  ~IbvDomain() override;
  Link* link(int peer) override;
  std::string peer_failure(int peer) override;
  std::string remote_abort() override;
  void abort(const std::string& why) override;
  bool needs_polling() const override { return true; }
  void advance() override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    progress();
  }

  void progress();
  RegCache& cache() { return *cache_; }
  std::recursive_mutex& mutex() { return mu_; }
  // A peer wrote its abort into our control block.
  bool aborted() const;

  // Completion queues are polled without events: the sleep is a yield.
  template <class Ready>
  void wait(WaitMonitor& mon, int peer, Ready ready) {
    network_wait(
        mon, peer, this, mu_, [&] { progress(); }, [] { sched_yield(); }, ready);
  }

 private:
  struct Ctrl;
  int rank_, nranks_;
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_cq *scq_ = nullptr, *rcq_ = nullptr;
  Region ctrl_;
  std::unique_ptr<PdRegistrar> registrar_;
  std::unique_ptr<RegCache> cache_;
  std::map<int, std::unique_ptr<IbvLink>> links_;
  std::map<uint32_t, IbvLink*> by_qpn_;
  std::recursive_mutex mu_;
};

}  // namespace coral::transport::ibverbs
