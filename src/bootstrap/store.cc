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

Bytes CancellableStore::get(const std::string& key, std::chrono::milliseconds timeout) {
  if (watch_.empty()) return inner_->get_or_cancel(key, timeout, *cancel_);
  using Clock = std::chrono::steady_clock;
  const auto end = Clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now());
    try {
      return inner_->get_or_cancel(key, std::clamp(left, std::chrono::milliseconds(0), std::chrono::milliseconds(1000)),
                                   *cancel_);
    } catch (const Error& e) {
      if (e.code() != coralTimeout || Clock::now() >= end) throw;
    }
    if (inner_->add(watch_, 0) > 0)
      fail(coralRemoteError, to_string(inner_->get(watch_ + "/why", std::chrono::milliseconds(1000))));
  }
}

void tell_failed(Store& store, const std::string& key, const std::string& why) {
  try {
    // The first failure is the cause; the ranks it stopped have nothing to add.
    if (store.add(key, 0) > 0) return;
    store.set_within(key + "/why", to_bytes(why), std::chrono::milliseconds(1000));
    store.add(key, 1);      // after the reason: whoever sees the flag finds it
  } catch (const Error&) {  // the store is out of reach: the others find out at their timeout
  }
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
