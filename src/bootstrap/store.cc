#include "bootstrap/store.h"

#include <sys/socket.h>

#include <algorithm>

#include "base/error.h"

namespace coral::bootstrap {

void CancelToken::cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = true;
  for (int fd : fds_) shutdown(fd, SHUT_RDWR);
}

void CancelToken::attach(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  fds_.push_back(fd);
  if (cancelled_) shutdown(fd, SHUT_RDWR);
}

void CancelToken::detach(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  std::erase(fds_, fd);
}

Bytes Store::get_or_cancel(const std::string& key, std::chrono::milliseconds timeout, CancelToken& cancel) {
  if (cancel.cancelled()) fail(coralRemoteError, "store: wait for '" + key + "' given up (communicator aborted)");
  return get(key, timeout);
}

void CancellableStore::check() const {
  if (cancel_->cancelled()) fail(coralRemoteError, "store: request given up (communicator aborted)");
}

void CancellableStore::set(const std::string& key, const Bytes& value) {
  check();
  inner_->set(key, value);
}

int64_t CancellableStore::add(const std::string& key, int64_t delta) {
  check();
  return inner_->add(key, delta);
}

Bytes to_bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }
std::string to_string(const Bytes& b) { return std::string(b.begin(), b.end()); }

std::vector<Bytes> store_allgather(Store& store, const std::string& prefix, int rank, int nranks, const Bytes& mine,
                                   std::chrono::milliseconds timeout) {
  store.set(prefix + "/" + std::to_string(rank), mine);
  std::vector<Bytes> all(nranks);
  for (int r = 0; r < nranks; ++r) all[r] = r == rank ? mine : store.get(prefix + "/" + std::to_string(r), timeout);
  return all;
}

void store_barrier(Store& store, const std::string& prefix, int rank, int nranks, std::chrono::milliseconds timeout) {
  store_allgather(store, prefix, rank, nranks, Bytes{}, timeout);
}

void store_last_barrier(Store& store, const std::string& prefix, int rank, int nranks,
                        std::chrono::milliseconds timeout) {
  store_barrier(store, prefix, rank, nranks, timeout);
  if (nranks == 1) return;
  if (rank != 0) {
    if (store.add(prefix + "/left", 1) == nranks - 1) store.set(prefix + "/all-left", {});
    return;
  }
  try {
    store.get(prefix + "/all-left", std::min(timeout, std::chrono::milliseconds(10000)));
  } catch (const Error&) {
    // A rank that died right after the barrier: its peers will find out; the barrier was met.
  }
}

}  // namespace coral::bootstrap
