// torch.distributed.monitored_barrier: a barrier whose rank 0 names the ranks that did not reach
// it in time, with the error texts gloo gives (torch's tests and users' scripts match on them).
// It meets through the group's c10d store, not through Coral: a rank that never arrives then
// leaves no pending Coral receive behind, and the communicator stays usable for the others.
#include <c10/util/Exception.h>

#include <chrono>
#include <string>
#include <vector>

#include "compat/torch/process_group.h"

namespace coral::torch_backend {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string join(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

// Whether key appears within limit. The store's own wait takes 0 as "no limit".
bool arrives(::c10d::Store& store, const std::string& key, milliseconds limit) {
  if (limit.count() <= 0) return store.check({key});
  try {
    store.wait({key}, limit);
    return true;
  } catch (const std::exception&) {
    return store.check({key});
  }
}

}  // namespace

void ProcessGroupCoral::monitoredBarrier(const ::c10d::BarrierOptions& opts, bool waitAllRanks) {
  const milliseconds limit = opts.timeout == ::c10d::kUnsetTimeout ? timeout_ : opts.timeout;
  const int rank = getRank(), size = getSize();
  // Every member calls it in the same order, so the n-th call meets the n-th call.
  const std::string base = "coral/monitored_barrier/" + std::to_string(monitored_++) + "/";
  const std::string verdict = base + "verdict";
  if (rank != 0) {
    store_->set(base + std::to_string(rank), std::vector<uint8_t>{1});
    const std::string prefix = "Rank " + std::to_string(rank) +
                               " successfully reached monitoredBarrier, but received errors while waiting for "
                               "send/recv from rank 0. ";
    // Only rank 0 keeps the barrier's time: the others wait as long as the group does, so rank 0
    // is the one to report who is missing.
    TORCH_CHECK(arrives(*store_, verdict, timeout_), prefix, "Rank 0 gave no answer within ", timeout_.count(), " ms.");
    const std::vector<uint8_t> v = store_->get(verdict);
    TORCH_CHECK(v.empty(), prefix, "Rank 0 reported: ", std::string(v.begin(), v.end()));
    return;
  }
  const auto start = Clock::now();
  std::vector<int> missing;
  std::string error;
  for (int r = 1; r < size && error.empty(); ++r) {
    // Asked for every missing rank, each gets the whole time; else the time left.
    milliseconds wait = limit;
    if (!waitAllRanks) {
      wait = limit - std::chrono::duration_cast<milliseconds>(Clock::now() - start);
      if (wait.count() <= 0 && !store_->check({base + std::to_string(r)})) {
        error = "Rank 0 timed out in monitoredBarrier after " + std::to_string(limit.count()) +
                " ms; ranks not yet checked: " + std::to_string(r) + " to " + std::to_string(size - 1);
        break;
      }
    }
    if (arrives(*store_, base + std::to_string(r), wait)) continue;
    missing.push_back(r);
    if (!waitAllRanks)
      error =
          "Rank " + std::to_string(r) + " failed to pass monitoredBarrier in " + std::to_string(limit.count()) + " ms";
  }
  if (error.empty() && !missing.empty())
    error = "Ranks " + join(missing) + " failed to pass monitoredBarrier in " + std::to_string(limit.count()) + " ms";
  // The others learn the outcome at once instead of at their timeout.
  store_->set(verdict, std::vector<uint8_t>(error.begin(), error.end()));
  for (int r = 1; r < size; ++r) store_->deleteKey(base + std::to_string(r));
  TORCH_CHECK(error.empty(), "[Rank 0]: ", error);
}

}  // namespace coral::torch_backend
