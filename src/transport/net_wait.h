// The waiting policy of the network transports (tcp, ucx, ibverbs): whoever waits drives the
// transport. Poll, yield, poll... and once the monitor's polls are spent, sleep in short slices
// that end early on events, asking the monitor between slices whether to give up. Every pass
// also moves the communicator's other transports along (WaitMonitor::poll_others).
#pragma once
#include <sched.h>

#include <mutex>
#include <string>
#include <vector>

#include "core/wait.h"

namespace coral::transport {

// poll(): one non-blocking pass; sleep(): block until an event or about 20 ms.
template <class Poll, class Sleep, class Ready>
void network_wait(WaitMonitor& mon, int peer, const void* self, std::recursive_mutex& mu, Poll poll, Sleep sleep,
                  Ready ready) {
  for (int i = 0;; ++i) {
    const bool sleeping = i >= mon.spin;
    {
      std::lock_guard<std::recursive_mutex> lock(mu);
      poll();
      if (sleeping && !ready()) sleep();
    }
    if (ready()) return;
    mon.poll_others(self);
    if (!sleeping) {
      // A poll is a system call (or a completion queue read) anyway; yielding as well costs
      // little and lets the rank we wait for run when a host has fewer cores than ranks.
      sched_yield();
    } else {
      mon.check(peer);
    }
  }
}

// "lost ranks 2, 3 (why)": the error of a wait whose peer went away, naming every rank gone.
std::string lost_ranks(const std::vector<int>& lost, const std::string& why);

}  // namespace coral::transport
