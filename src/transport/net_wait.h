// The waiting policy of the network transports (tcp, ucx, ibverbs): whoever waits drives the
// transport. Poll, yield, poll... and once the monitor's polls are spent, sleep in short slices
// that end early on events, asking the monitor between slices whether to give up. Every pass
// also moves the communicator's other transports along (WaitMonitor::poll_others).
#pragma once
#include <sched.h>

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "base/wait.h"

namespace coral::transport {

// poll(): one non-blocking pass; sleep(): block until an event or about 20 ms.
template <class Poll, class Sleep, class Ready>
void network_wait(WaitMonitor& mon, int peer, const void* self, std::recursive_mutex& mu, Poll poll, Sleep sleep,
                  Ready ready) {
  // Already there (a free send slot, a message read by an earlier pass): no system call.
  if (ready()) return;
  const int spin = mon.spin_now();
  for (int i = 0;; ++i) {
    const bool sleeping = i >= spin;
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

// peer_failure of a network domain: "" while the link to peer is healthy. Otherwise, since a
// host going down closes all its connections within moments, it polls for 50 ms more so the
// error names every rank lost, not just the first one noticed. links maps rank -> link (with
// failure()); clean(q, link): q said goodbye before its connection closed; why(link): the text.
template <class Links, class Poll, class Clean, class Why>
std::string lost_peers(int peer, const Links& links, Poll poll, Clean clean, Why why) {
  auto it = links.find(peer);
  if (it == links.end() || it->second->failure().empty()) return "";
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  while (std::chrono::steady_clock::now() < until) poll();
  std::vector<int> lost;
  for (auto& [q, l] : links)
    if (!l->failure().empty() && (q == peer || !clean(q, *l))) lost.push_back(q);
  return lost_ranks(lost, why(*it->second));
}

}  // namespace coral::transport
