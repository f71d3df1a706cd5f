// The UCX links of one communicator: one UCP context and worker, endpoints to every peer.
// Like the TCP domain, whoever waits drives the worker; a wait sleeps on the worker's event fd
// once its polls run out.
#pragma once
#include <sched.h>
#include <ucp/api/ucp.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/wait.h"
#include "transport/net_wait.h"
#include "transport/transport.h"
#include "transport/ucx/connection.h"

namespace coral::transport::ucx {

class UcxDomain : public Domain {
 public:
  explicit UcxDomain(const ConnectArgs& a);
  ~UcxDomain() override;
  Link* link(int peer) override;
  std::string peer_failure(int peer) override;
  std::string remote_abort() override;
  void abort(const std::string& why) override;
  void drain(WaitMonitor& mon) override;
  bool needs_polling() const override { return true; }
  void advance() override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    progress();
  }

  ucp_worker_h worker() const { return worker_; }
  std::recursive_mutex& mutex() { return mu_; }
  void progress();
  // A peer's abort arrived (under the lock; progress() takes it in).
  bool aborted() const { return !abort_text_.empty(); }

  template <class Ready>
  void wait(WaitMonitor& mon, int peer, Ready ready) {
    network_wait(
        mon, peer, this, mu_, [&] { progress(); }, [&] { sleep_for_events(20); }, ready);
  }

 private:
  void sleep_for_events(int ms);
  void post_control();
  void teardown();

  int rank_ = 0;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int efd_ = -1;
  std::map<int, std::unique_ptr<UcxLink>> links_;
  // Control receives: an abort from anyone, goodbyes from anyone.
  struct Control {
    Slot slot;
    char text[1024];
  };
  Control abort_in_, bye_in_;
  std::string abort_text_;
  std::recursive_mutex mu_;
};

}  // namespace coral::transport::ucx
