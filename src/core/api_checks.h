// What every C entry point on a communicator shares (api*.cc): the argument checks, and the
// launch of a validated call (now, on a stream, queued, or deferred into the thread's group).
#pragma once
#include <coral/coral.h>

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <memory>

#include "base/error.h"
#include "kernels/reduce.h"

#include "core/communicator.h"
#include "core/guard.h"

struct coralRequest {
  std::shared_ptr<coral::Request> req;
  coralComm* comm_;
  std::weak_ptr<const bool> alive;
  // The communicator to record a failure on: none once it has been destroyed.
  coralComm* comm() const { return alive.expired() ? nullptr : comm_; }
};

namespace coral::capi {

// The checks every call makes, inline: an 8-byte all-reduce spent a visible share of its time
// calling them.
inline Communicator& need(coralComm* comm) {
  if (!comm) fail(coralInvalidArgument, "comm is NULL");
  if (!comm->ready.load(std::memory_order_acquire)) [[unlikely]]
    fail(coralInProgress, "the communicator is still being created (coralCommGetAsyncError says when it is up)");
  if (!comm->impl) [[unlikely]]
    fail(comm->init_result, "the communicator's creation failed: " + comm->init_error);
  return *comm->impl;
}
inline void check_type(coralDataType_t t) {
  if (!kernels::valid_dtype(t)) fail(coralInvalidArgument, "invalid datatype " + std::to_string(static_cast<int>(t)));
}
// op for datatype t on c: a built-in op, or a live PreMulSum op of c for t, whose scalar it
// puts in premul.
void check_op_slow(Communicator& c, coralRedOp_t op, coralDataType_t t, Premul& premul);
inline void check_op(Communicator& c, coralRedOp_t op, coralDataType_t t, Premul& premul) {
  if (static_cast<unsigned>(op) >= coralNumOps) check_op_slow(c, op, t, premul);  // the NCCL ops take every type
}
inline void check_buf(const void* p, size_t count, const char* name) {
  if (!p && count > 0) fail(coralInvalidArgument, std::string(name) + " is NULL with count > 0");
}
// count * factor elements of t stay addressable.
inline void check_bytes(size_t count, coralDataType_t t, size_t factor) {
  size_t bytes;
  if (__builtin_mul_overflow(count, kernels::dtype_size(t), &bytes) ||
      __builtin_mul_overflow(bytes, factor ? factor : 1, &bytes) || bytes > static_cast<size_t>(PTRDIFF_MAX))
    fail(coralInvalidArgument, "count " + std::to_string(count) + " overflows the addressable size");
}
// Send and receive buffers (in elements of t) lie apart, or in the call's in-place layout:
// a partial overlap would have the call read data it has already overwritten.
inline void check_apart(const void* s, size_t s_elems, const void* r, size_t r_elems, coralDataType_t t,
                        bool in_place) {
  if (in_place || !s || !r || !s_elems || !r_elems) return;
  const size_t es = kernels::dtype_size(t);
  const auto a = reinterpret_cast<uintptr_t>(s), b = reinterpret_cast<uintptr_t>(r);
  if (a < b + r_elems * es && b < a + s_elems * es)
    fail(coralInvalidArgument, fmt::format("sendbuff ({} bytes at {}) and recvbuff ({} bytes at {}) overlap, and not "
                                           "in the call's in-place layout",
                                           s_elems * es, s, r_elems * es, static_cast<const void*>(r)));
}
inline void check_root(const Communicator& c, int root, const char* what) {
  if (root < 0 || root >= c.nranks())
    fail(coralInvalidArgument,
         std::string(what) + " " + std::to_string(root) + " is out of range [0, " + std::to_string(c.nranks()) + ")");
}
// counts[0..nranks): non-NULL, each addressable; returns their sum.
size_t check_counts(const Communicator& c, const size_t* counts, coralDataType_t t, const char* name);
// Where the call's buffers live: -1 for host memory, else the GPU (refusals name what is wrong).
int buffers_device(Communicator& c, const Call& call, void* stream);
// The checked call of one of the original collectives (and send/recv).
Call validated(coralComm* comm, collectives::Coll coll, const void* s, void* r, size_t n, coralDataType_t t,
               coralRedOp_t op, int root);

// Groups (api_group.cc): the depth of this thread's coralGroupStart, and deferring a call.
int group_depth();
void group_add(coralComm* comm, Call call, void* stream, bool device);
// A call inside a group failed its checks: coralGroupEnd returns the first such failure.
void group_failed(coralResult_t rc, const std::string& msg);

// A host call without a stream reads a device-resident PreMulSum scalar now (api_checks.cc).
void host_scalar_now(Call& call, void* stream, int dev);

// Runs what make() returns: deferred when this thread is inside a group, else at once (stream
// NULL and host buffers) or stream-ordered. A template, not a std::function: an 8-byte call
// would pay for the closure's allocation.
template <class Make>
coralResult_t launch(const char* fn, coralComm* comm, const Make& make, void* stream) {
  return guard(comm, fn, [&] {
    Communicator* cp = nullptr;
    int dev = -1;
    auto checked = [&] {
      try {
        cp = &need(comm);
        Call made = make(*cp);
        dev = buffers_device(*cp, made, stream);
        return made;
      } catch (const Error& e) {
        group_failed(e.code(), std::string(fn) + ": " + e.what());
        throw;
      }
    };
    Call call = checked();
    Communicator& c = *cp;
    if (group_depth() > 0) return group_add(comm, std::move(call), stream, dev >= 0);
    const bool p2p = is_p2p(call);
    if (p2p && call.args.root == c.rank())
      fail(coralInvalidUsage,
           fmt::format("{} this rank ({}) outside a group would wait forever for its own "
                       "match: put both in one coralGroupStart/End, or use coralISend/coralIRecv",
                       call.args.coll == collectives::Coll::Send ? "a send to" : "a receive from", c.rank()));
    host_scalar_now(call, stream, dev);
    // Device buffers with stream NULL follow NCCL: the legacy default stream. Stream-ordered
    // sends and receives take the point-to-point engine's path, as host ones (gpu_group.cc).
    if (p2p && (stream || dev >= 0)) {
      call.device = dev >= 0;
      if (auto req = c.run_group_on_stream({call}, stream)) req->wait_ok();
    } else if (stream || dev >= 0) {
      if (auto req = c.run_on_stream(call, stream, dev >= 0)) req->wait_ok();
    } else {
      c.run(call);
    }
  });
}

// The non-blocking form: host buffers only, queued on the progress thread.
coralResult_t launch_nb(const char* fn, coralComm* comm, const std::function<Call(Communicator&)>& make,
                        coralRequest_t* req);

// A handle whose communicator create() makes on a thread of its own (coralConfig_t::blocking
// = 0): ready once it is done, with create()'s failure kept as the handle's.
coralComm* create_in_background(const char* fn, std::function<std::unique_ptr<Communicator>()> create);

}  // namespace coral::capi
