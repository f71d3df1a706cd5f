// Header-only C++ wrapper: RAII communicator, std::span overloads, exceptions with the detail.
#pragma once
#include <coral/coral.h>

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace coral {

class error : public std::runtime_error {
 public:
  error(coralResult_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  coralResult_t code() const noexcept { return code_; }

 private:
  coralResult_t code_;
};

inline void check(coralResult_t rc, coralComm_t comm = nullptr) {
  if (rc != coralSuccess) {
    std::string detail = coralGetLastError(comm);
    throw error(rc, std::string(coralGetErrorString(rc)) + (detail.empty() ? "" : ": " + detail));
  }
}

template <class T>
constexpr coralDataType_t datatype_of() {
  if constexpr (std::is_same_v<T, int8_t>)
    return coralInt8;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return coralUint8;
  else if constexpr (std::is_same_v<T, int32_t>)
    return coralInt32;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return coralUint32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return coralInt64;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return coralUint64;
  else if constexpr (std::is_same_v<T, float>)
    return coralFloat32;
  else if constexpr (std::is_same_v<T, double>)
    return coralFloat64;
  else
    static_assert(!sizeof(T), "no Coral datatype for this type");
}

// A finished-or-not non-blocking operation; waits in its destructor if still pending.
class request {
 public:
  request() = default;
  explicit request(coralRequest_t r) : r_(r) {}
  request(request&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  request& operator=(request&& o) noexcept {
    if (this != &o) {
      finish();
      r_ = o.r_;
      o.r_ = nullptr;
    }
    return *this;
  }
  ~request() { finish(); }
  void wait() {
    coralRequest_t r = r_;
    r_ = nullptr;
    if (r) check(coralWait(r));
  }
  bool test() {
    if (!r_) return true;
    int done = 0;
    coralRequest_t r = r_;
    coralResult_t rc = coralTest(r, &done);
    if (done || rc != coralSuccess) r_ = nullptr;
    check(rc);
    return done != 0;
  }

 private:
  void finish() noexcept {
    if (r_) coralWait(r_);
    r_ = nullptr;
  }
  coralRequest_t r_ = nullptr;
};

class communicator {
 public:
  // From the launcher's environment (coral-run, mpirun, srun, torchrun).
  communicator() { check(coralCommInitEnv(&comm_)); }
  communicator(int nranks, const coralUniqueId& id, int rank) { check(coralCommInitRank(&comm_, nranks, id, rank)); }
  communicator(const communicator&) = delete;
  communicator& operator=(const communicator&) = delete;
  communicator(communicator&& o) noexcept : comm_(o.comm_) { o.comm_ = nullptr; }
  // Takes o's communicator and destroys the one held before (a failed one too: a survivor
  // replaces the communicator it shrank).
  communicator& operator=(communicator&& o) noexcept {
    if (this != &o) {
      release();
      comm_ = o.comm_;
      o.comm_ = nullptr;
    }
    return *this;
  }
  ~communicator() { release(); }
  static coralUniqueId unique_id() {
    coralUniqueId id;
    check(coralGetUniqueId(&id));
    return id;
  }

  coralComm_t get() const { return comm_; }
  int rank() const {
    int r;
    check(coralCommUserRank(comm_, &r), comm_);
    return r;
  }
  int size() const {
    int n;
    check(coralCommCount(comm_, &n), comm_);
    return n;
  }

  template <class T>
  void all_reduce(std::span<const T> send, std::span<T> recv, coralRedOp_t op = coralSum) {
    same_size(send.size(), recv.size());
    check(coralAllReduce(send.data(), recv.data(), recv.size(), datatype_of<T>(), op, comm_, nullptr), comm_);
  }
  template <class T>
  void all_reduce(std::span<T> inout, coralRedOp_t op = coralSum) {
    check(coralAllReduce(inout.data(), inout.data(), inout.size(), datatype_of<T>(), op, comm_, nullptr), comm_);
  }
  template <class T>
  request iall_reduce(std::span<T> inout, coralRedOp_t op = coralSum) {
    coralRequest_t r;
    check(coralIAllReduce(inout.data(), inout.data(), inout.size(), datatype_of<T>(), op, comm_, &r), comm_);
    return request(r);
  }
  template <class T>
  void reduce_scatter(std::span<const T> send, std::span<T> recv, coralRedOp_t op = coralSum) {
    same_size(send.size(), recv.size() * static_cast<size_t>(size()));
    check(coralReduceScatter(send.data(), recv.data(), recv.size(), datatype_of<T>(), op, comm_, nullptr), comm_);
  }
  template <class T>
  void all_gather(std::span<const T> send, std::span<T> recv) {
    same_size(send.size() * static_cast<size_t>(size()), recv.size());
    check(coralAllGather(send.data(), recv.data(), send.size(), datatype_of<T>(), comm_, nullptr), comm_);
  }
  template <class T>
  void broadcast(std::span<T> buf, int root) {
    check(coralBroadcast(buf.data(), buf.data(), buf.size(), datatype_of<T>(), root, comm_, nullptr), comm_);
  }
  template <class T>
  void reduce(std::span<const T> send, std::span<T> recv, int root, coralRedOp_t op = coralSum) {
    check(coralReduce(send.data(), recv.data(), send.size(), datatype_of<T>(), op, root, comm_, nullptr), comm_);
  }
  template <class T>
  void send(std::span<const T> buf, int peer) {
    check(coralSend(buf.data(), buf.size(), datatype_of<T>(), peer, comm_, nullptr), comm_);
  }
  template <class T>
  void recv(std::span<T> buf, int peer) {
    check(coralRecv(buf.data(), buf.size(), datatype_of<T>(), peer, comm_, nullptr), comm_);
  }
  void barrier() { check(coralBarrier(comm_), comm_); }
  template <class T>
  request isend(std::span<const T> buf, int peer) {
    coralRequest_t r;
    check(coralISend(buf.data(), buf.size(), datatype_of<T>(), peer, comm_, &r), comm_);
    return request(r);
  }
  template <class T>
  request irecv(std::span<T> buf, int peer) {
    coralRequest_t r;
    check(coralIRecv(buf.data(), buf.size(), datatype_of<T>(), peer, comm_, &r), comm_);
    return request(r);
  }
  template <class T>
  void all_to_all(std::span<const T> send, std::span<T> recv) {
    same_size(send.size(), recv.size());
    const size_t p = static_cast<size_t>(size());
    if (recv.size() % p) throw error(coralInvalidArgument, "span size is not a multiple of the communicator size");
    check(coralAllToAll(send.data(), recv.data(), recv.size() / p, datatype_of<T>(), comm_, nullptr), comm_);
  }
  template <class T>
  void gather(std::span<const T> send, std::span<T> recv, int root) {
    check(coralGather(send.data(), recv.data(), send.size(), datatype_of<T>(), root, comm_, nullptr), comm_);
  }
  template <class T>
  void scatter(std::span<const T> send, std::span<T> recv, int root) {
    check(coralScatter(send.data(), recv.data(), recv.size(), datatype_of<T>(), root, comm_, nullptr), comm_);
  }
  // A new communicator of the ranks with this color, ordered by key; an empty one (get() ==
  // nullptr) for CORAL_SPLIT_NOCOLOR.
  communicator split(int color, int key) {
    communicator c{empty_t{}};
    check(coralCommSplit(comm_, color, key, &c.comm_), comm_);
    return c;
  }
  communicator shrink(std::span<const int> exclude) {
    communicator c{empty_t{}};
    check(coralCommShrink(comm_, exclude.data(), static_cast<int>(exclude.size()), &c.comm_), comm_);
    return c;
  }
  // Fails this rank's and its peers' pending operations and every later one (coralCommRevoke).
  void revoke() { check(coralCommRevoke(comm_), comm_); }
  // The ranks this rank knows to have failed (coralCommGetFailedRanks), ascending.
  std::vector<int> failed_ranks() const {
    std::vector<int> out(8);
    for (;;) {
      int n = static_cast<int>(out.size());
      check(coralCommGetFailedRanks(comm_, out.data(), &n), comm_);
      if (static_cast<size_t>(n) <= out.size()) {
        out.resize(static_cast<size_t>(n));
        return out;
      }
      out.resize(static_cast<size_t>(n));
    }
  }

 private:
  struct empty_t {};
  explicit communicator(empty_t) {}
  void release() noexcept {
    if (comm_) coralCommDestroy(comm_);
    comm_ = nullptr;
  }
  static void same_size(size_t a, size_t b) {
    if (a != b) throw error(coralInvalidArgument, "span sizes do not match the collective's layout");
  }
  coralComm_t comm_ = nullptr;
};

}  // namespace coral
