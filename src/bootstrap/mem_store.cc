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
  int64_t v = 0;
  Bytes& b = data_[key];
  if (b.size() == sizeof v) std::memcpy(&v, b.data(), sizeof v);
  v += delta;
  b.resize(sizeof v);
  std::memcpy(b.data(), &v, sizeof v);
  cv_.notify_all();
  return v;
}

}  // namespace coral::bootstrap
