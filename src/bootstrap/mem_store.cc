#include "bootstrap/mem_store.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"

namespace coral::bootstrap {

void MemStore::set(const std::string& key, const Bytes& value) {
  std::lock_guard<std::mutex> lock(mu_);
  data_[key] = value;
  cv_.notify_all();
}

Bytes MemStore::get(const std::string& key, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return data_.count(key) > 0; }))
    fail(coralTimeout, "store: timed out waiting for key '" + key + "'");
  return data_[key];
}

Bytes MemStore::get_or_cancel(const std::string& key, std::chrono::milliseconds timeout, CancelToken& cancel) {
  // A test store: the token has no socket to shut down here, so the wait looks every 10 ms.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock<std::mutex> lock(mu_);
  while (cancel.cancelled() || !data_.count(key)) {
    if (cancel.cancelled()) fail(coralRemoteError, "store: wait for '" + key + "' given up (communicator aborted)");
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) fail(coralTimeout, "store: timed out waiting for key '" + key + "'");
    cv_.wait_for(lock, std::min<std::chrono::steady_clock::duration>(deadline - now, std::chrono::milliseconds(10)));
  }
  return data_[key];
}

int64_t MemStore::add(const std::string& key, int64_t delta) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t v = 0;  // wraps like the TCP store's counters
  Bytes& b = data_[key];
  if (b.size() == sizeof v) std::memcpy(&v, b.data(), sizeof v);
  v += static_cast<uint64_t>(delta);
  b.resize(sizeof v);
  std::memcpy(b.data(), &v, sizeof v);
  cv_.notify_all();
  return static_cast<int64_t>(v);
}

}  // namespace coral::bootstrap
