// In-process store for tests where ranks are threads.
#pragma once
#include <condition_variable>
#include <map>
#include <mutex>

#include "bootstrap/store.h"

namespace coral::bootstrap {

class MemStore : public Store {
 public:
  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key, std::chrono::milliseconds timeout) override;
  Bytes get_or_cancel(const std::string& key, std::chrono::milliseconds timeout, CancelToken& cancel) override;
  int64_t add(const std::string& key, int64_t delta) override;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Bytes> data_;
};

}  // namespace coral::bootstrap
