// Key-value rendezvous used to bootstrap a communicator (addresses, host ids, segment names).
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace coral::bootstrap {

using Bytes = std::vector<uint8_t>;

// Gives up waits on a store from another thread (coralCommAbort, coralCommRevoke): a wait in
// progress ends at once with coralRemoteError, and so do the later ones it guards. Sockets
// attached to it are shut down (which wakes a wait in recv); their owners close them.
class CancelToken {
 public:
  void cancel();
  bool cancelled() const { return cancelled_.load(); }
  const std::atomic<bool>* flag() const { return &cancelled_; }
  // A connection while a guarded request uses it (never a closed, reused fd).
  void attach(int fd);
  void detach(int fd);

 private:
  std::mutex mu_;
  std::atomic<bool> cancelled_{false};
  std::vector<int> fds_;
};

class Store {
 public:
  virtual ~Store() = default;
  virtual void set(const std::string& key, const Bytes& value) = 0;
  // set that gives up (coralTimeout) after timeout, for writes nothing waits on. The default
  // cannot be late.
  virtual void set_within(const std::string& key, const Bytes& value, std::chrono::milliseconds timeout) {
    (void)timeout;
    set(key, value);
  }
  // Waits until key exists; throws coral::Error(coralTimeout) after timeout.
  virtual Bytes get(const std::string& key, std::chrono::milliseconds timeout) = 0;
  // Atomically adds delta to the integer stored at key (0 if absent) and returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  // get that also ends, with coralRemoteError, once cancel is cancelled (already, or during the
  // wait). This default checks only before it waits.
  virtual Bytes get_or_cancel(const std::string& key, std::chrono::milliseconds timeout, CancelToken& cancel);
  // host:port where the store is served, "" for an in-process store. Network transports pick
  // the interface that reaches it.
  virtual std::string address() const { return ""; }
};

// One communicator's view of a store that others share (a split's parent and siblings): its
// waits end when its own token is cancelled, and the store goes on serving the others.
class CancellableStore final : public Store {
 public:
  CancellableStore(std::shared_ptr<Store> inner, std::shared_ptr<CancelToken> cancel)
      : inner_(std::move(inner)), cancel_(std::move(cancel)) {}
  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key, std::chrono::milliseconds timeout) override {
    return inner_->get_or_cancel(key, timeout, *cancel_);
  }
  int64_t add(const std::string& key, int64_t delta) override;
  std::string address() const override { return inner_->address(); }

 private:
  void check() const;
  std::shared_ptr<Store> inner_;
  std::shared_ptr<CancelToken> cancel_;
};

// Helpers built on any store. prefix scopes the keys of one communicator.
Bytes to_bytes(const std::string& s);
std::string to_string(const Bytes& b);
// Every rank contributes a value; returns all of them indexed by rank.
std::vector<Bytes> store_allgather(Store& store, const std::string& prefix, int rank, int nranks, const Bytes& mine,
                                   std::chrono::milliseconds timeout);
void store_barrier(Store& store, const std::string& prefix, int rank, int nranks, std::chrono::milliseconds timeout);
// A barrier after which the store may go: rank 0, whose process often serves it
// (coralGetUniqueId, MASTER_ADDR), returns once the others have read it (10 s at most), so a
// program that ends right after does not take the store from under their last reads.
void store_last_barrier(Store& store, const std::string& prefix, int rank, int nranks,
                        std::chrono::milliseconds timeout);

}  // namespace coral::bootstrap
