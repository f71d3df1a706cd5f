// Key-value rendezvous used to bootstrap a communicator (addresses, host ids, segment names).
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace coral::bootstrap {

using Bytes = std::vector<uint8_t>;

class Store {
 public:
  virtual ~Store() = default;
  virtual void set(const std::string& key, const Bytes& value) = 0;
  // Waits until key exists; throws coral::Error(coralTimeout) after timeout.
  virtual Bytes get(const std::string& key, std::chrono::milliseconds timeout) = 0;
  // Atomically adds delta to the integer stored at key (0 if absent) and returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  // host:port where the store is served, "" for an in-process store. Network transports pick
  // the interface that reaches it.
  virtual std::string address() const { return ""; }
};

// Helpers built on any store. prefix scopes the keys of one communicator.
Bytes to_bytes(const std::string& s);
std::string to_string(const Bytes& b);
// Every rank contributes a value; returns all of them indexed by rank.
std::vector<Bytes> store_allgather(Store& store, const std::string& prefix, int rank, int nranks, const Bytes& mine,
                                   std::chrono::milliseconds timeout);
void store_barrier(Store& store, const std::string& prefix, int rank, int nranks, std::chrono::milliseconds timeout);

}  // namespace coral::bootstrap
