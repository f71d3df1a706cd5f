// torch.distributed.monitored_barrier: a barrier whose rank 0 names the ranks that did not reach
// it in time, with the error texts gloo gives (torch's tests and users' scripts match on them).
// It meets through the group's c10d store, not through Coral: a rank that never arrives then
// leaves no pending Coral receive behind, and the communicator stays usable for the others.
#include <c10/util/Exception.h>

#include <chrono>
#include <string>
#include <thread>
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

// Whether key appears within limit. Polled: a timed-out Store::wait cannot be taken back on torch
// 1.13's TCPStore, whose server then answers it later on the same connection.
bool arrives(::c10d::Store& store, const std::string& key, milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  for (auto pause = milliseconds(1);; pause = std::min(pause * 2, milliseconds(20))) {
    if (store.check({key})) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline - Clock::now()));
  }
}

}  // namespace

void ProcessGroupCoral::monitoredBarrier(const ::c10d::BarrierOptions& opts, bool waitAllRanks) {
  const milliseconds limit = opts.timeout == ::c10d::kUnsetTimeout ? timeout_ : opts.timeout;
  const int rank = getRank(), size = getSize();
  // Every member calls it in the same order, so the n-th call meets the n-th call. The group's
  // nonce keeps a group made again on the same store from reading an earlier one's keys.
  const uint64_t n = monitored_++;
  const auto key = [&](uint64_t call, const std::string& what) {
    return "coral/monitored_barrier/" + nonce_ + "/" + std::to_string(call) + "/" + what;
  };
  const std::string verdict = key(n, "verdict");
  if (rank != 0) {
    const std::string prefix = "Rank " + std::to_string(rank) +
                               " successfully reached monitoredBarrier, but received errors while waiting for "
                               "send/recv from rank 0. ";
    // Only rank 0 keeps the barrier's time, so that it is the one to name who is missing; the
    // others wait at least as long as it may take (each missing rank gets the whole time when
    // rank 0 is asked for all of them).
    const milliseconds patience = std::max(timeout_, limit * std::max(1, size - 1) + milliseconds(5000));
    std::vector<uint8_t> v;
    try {
      store_->set(key(n, std::to_string(rank)), std::vector<uint8_t>{1});
      if (!arrives(*store_, verdict, patience))
        TORCH_CHECK(false, prefix, "Rank 0 gave no answer within ", patience.count(), " ms.");
      v = store_->get(verdict);
    } catch (const c10::Error&) {
      throw;
    } catch (const std::exception& e) {
      TORCH_CHECK(false, prefix, "The store failed: ", e.what());  // rank 0 gone, and its store with it
    }
    TORCH_CHECK(v.empty(), prefix, "Rank 0 reported: ", std::string(v.begin(), v.end()));
    return;
  }
  const auto start = Clock::now();
  std::vector<int> missing;
  std::string error;
  for (int r = 1; r < size; ++r) {
    // Asked for every missing rank, each gets the whole time; else the time left, and the first
    // missing one ends the wait.
    const milliseconds wait =
        waitAllRanks ? limit : limit - std::chrono::duration_cast<milliseconds>(Clock::now() - start);
    if (!waitAllRanks && wait.count() <= 0 && !store_->check({key(n, std::to_string(r))})) {
      error = "Rank 0 timed out in monitoredBarrier after " + std::to_string(limit.count()) +
              " ms; ranks not yet checked: " + std::to_string(r) + " to " + std::to_string(size - 1);
      break;
    }
    if (arrives(*store_, key(n, std::to_string(r)), wait)) continue;
    missing.push_back(r);
    if (!waitAllRanks) break;
  }
  if (error.empty() && !missing.empty())
    error = (waitAllRanks ? "Ranks " : "Rank ") + join(missing) + " failed to pass monitoredBarrier in " +
            std::to_string(limit.count()) + " ms";
  // The others learn the outcome at once instead of at their timeout.
  store_->set(verdict, std::vector<uint8_t>(error.begin(), error.end()));
  for (int r = 1; r < size; ++r) store_->deleteKey(key(n, std::to_string(r)));
  // Every rank that arrived here has read the previous call's verdict.
  if (error.empty() && n > 0) store_->deleteKey(key(n - 1, "verdict"));
  TORCH_CHECK(error.empty(), "[Rank 0]: ", error);
}

}  // namespace coral::torch_backend
