#include "bootstrap/mem_store.h"

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
