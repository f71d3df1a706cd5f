#include "elastic.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace trainer {
namespace {

using Clock = std::chrono::steady_clock;

// The ranks this survivor sees dead, once two looks 20 ms apart agree: a host going down closes
// its connections within moments, and every survivor should name all of them.
std::vector<int> settled_failures(coral::communicator& comm, const coral::error& why) {
  const auto give_up = Clock::now() + std::chrono::seconds(5);
  std::vector<int> seen = comm.failed_ranks();
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::vector<int> now = comm.failed_ranks();
    if (!now.empty() && now == seen) return now;
    if (Clock::now() > give_up) {
      if (now.empty()) throw why;
      return now;
    }
    seen = std::move(now);
  }
}

}  // namespace

std::vector<int> shrink_to_survivors(coral::communicator& comm, std::vector<int>& world, const coral::error& why) {
  std::vector<int> failed = settled_failures(comm, why);
  for (int attempt = 0;; attempt++) {
    try {
      coral::communicator next = comm.shrink(failed);
      std::vector<int> lost, kept;
      for (size_t r = 0; r < world.size(); r++)
        (std::binary_search(failed.begin(), failed.end(), static_cast<int>(r)) ? lost : kept).push_back(world[r]);
      world = std::move(kept);
      comm = std::move(next);
      return lost;
    } catch (const coral::error& e) {
      // Survivors that looked at different moments may name different ranks: the shrink says
      // so to all of them, and they look again.
      if (e.code() != coralInvalidUsage || attempt == 3) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::vector<int> more = comm.failed_ranks();
      failed.insert(failed.end(), more.begin(), more.end());
      std::sort(failed.begin(), failed.end());
      failed.erase(std::unique(failed.begin(), failed.end()), failed.end());
    }
  }
}

void die_now() {
  ::raise(SIGKILL);
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

}  // namespace trainer
