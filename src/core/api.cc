// The C API's calls on communicators (creation is in api_init.cc, device helpers in
// api_device.cc); the one guard (guard.h) turns exceptions into coralResult_t + a message.
#include <cstring>
#include <mutex>

#include "base/error.h"
#include "base/log.h"
#include "core/communicator.h"
#include "core/guard.h"
#include "gpu/runtime.h"
#include "kernels/reduce.h"

struct coralRequest {
  std::shared_ptr<coral::Request> req;
  coralComm* comm;
};

namespace {

using coral::fail;
using coral::collectives::Coll;

using coral::capi::guard;
using coral::capi::t_last_error;
coral::Communicator& need(coralComm* comm) {
  if (!comm) fail(coralInvalidArgument, "comm is NULL");
  if (!comm->ready.load(std::memory_order_acquire))
    fail(coralInProgress, "the communicator is still being created (coralCommGetAsyncError says when it is up)");
  if (!comm->impl) fail(comm->init_result, "the communicator's creation failed: " + comm->init_error);
  return *comm->impl;
}

void check_type(coralDataType_t t) {
  if (!coral::kernels::valid_dtype(t))
    fail(coralInvalidArgument, "invalid datatype " + std::to_string(static_cast<int>(t)));
}
void check_op(coralRedOp_t op, coralDataType_t t) {
  if (!coral::kernels::valid_op(op))
    fail(coralInvalidArgument, "invalid reduction op " + std::to_string(static_cast<int>(op)));
  if (!coral::kernels::op_fits(t, op))
    fail(coralInvalidArgument, fmt::format("op {} is bitwise, for integer types; datatype {} is not one",
                                           coral::kernels::op_name(op), coral::kernels::dtype_name(t)));
}
void check_buf(const void* p, size_t count, const char* name) {
  if (!p && count > 0) fail(coralInvalidArgument, std::string(name) + " is NULL with count > 0");
}
void check_bytes(size_t count, coralDataType_t t, size_t factor) {
  size_t es = coral::kernels::dtype_size(t);
  if (count > static_cast<size_t>(PTRDIFF_MAX) / es / factor)
    fail(coralInvalidArgument, "count " + std::to_string(count) + " overflows the addressable size");
}

// Where a call's buffers live: -1 for host memory, else the GPU. A stream without usable CUDA,
// buffers split between host and device, or buffers on another GPU than the communicator's are
// refused with what was wrong.
int buffers_device(coral::Communicator& c, const coral::Call& call, void* stream) {
  if (!coral::gpu::usable()) {
    if (stream)
      fail(coralUnhandledCudaError, "a CUDA stream was passed but CUDA is not usable here (" + coral::gpu::why_not() +
                                        "); host buffers take stream NULL");
    return -1;
  }
  const void* bufs[2] = {call.send, call.recv};
  const char* names[2] = {"sendbuff", "recvbuff"};
  int dev[2] = {-2, -2};
  for (int i = 0; i < 2; ++i)
    if (bufs[i] && call.args.count)  // in place: one pointer query, not two
      dev[i] = i == 1 && bufs[1] == bufs[0] ? dev[0] : coral::gpu::device_of(bufs[i]);
  if (dev[0] != -2 && dev[1] != -2 && (dev[0] < 0) != (dev[1] < 0)) {
    const int g = dev[0] < 0 ? 1 : 0;  // the one on the GPU
    fail(coralInvalidArgument, fmt::format("{} is host memory but {} is on GPU {}: pass both on the GPU or both on "
                                           "the host",
                                           names[1 - g], names[g], dev[g]));
  }
  int d = std::max(dev[0], dev[1]);
  if (d < 0) return -1;
  int current = coral::gpu::current_device(), comm_dev = c.gpu_device();
  for (int i = 0; i < 2; ++i) {
    if (dev[i] < 0) continue;
    if (comm_dev >= 0 && dev[i] != comm_dev)
      fail(coralInvalidArgument, fmt::format("{} is on GPU {} but this communicator uses GPU {}: keep one GPU per "
                                             "communicator",
                                             names[i], dev[i], comm_dev));
    if (dev[i] != current)
      fail(coralInvalidArgument, fmt::format("{} is on GPU {} but the current device is GPU {}: call "
                                             "cudaSetDevice({}) first",
                                             names[i], dev[i], current, dev[i]));
  }
  return d;
}

void check_root(const coral::Communicator& c, int root, const char* what) {
  if (root < 0 || root >= c.nranks())
    fail(coralInvalidArgument,
         std::string(what) + " " + std::to_string(root) + " is out of range [0, " + std::to_string(c.nranks()) + ")");
}

// Validates and builds the call for each collective.
coral::Call validated(coralComm* comm, Coll coll, const void* s, void* r, size_t n, coralDataType_t t, coralRedOp_t op,
                      int root) {
  coral::Communicator& c = need(comm);
  check_type(t);
  if (coll == Coll::AllReduce || coll == Coll::ReduceScatter || coll == Coll::Reduce)
    check_op(op, t);
  else
    op = coralSum;
  size_t factor = (coll == Coll::ReduceScatter || coll == Coll::AllGather) ? c.nranks() : 1;
  check_bytes(n, t, factor);
  switch (coll) {
    case Coll::Broadcast:
      check_root(c, root, "root");
      if (c.rank() == root) check_buf(s, n, "sendbuff");
      check_buf(r, n, "recvbuff");
      break;
    case Coll::Reduce:
      check_root(c, root, "root");
      check_buf(s, n, "sendbuff");
      if (c.rank() == root) check_buf(r, n, "recvbuff");
      break;
    case Coll::Send:
      check_root(c, root, "peer");
      if (root == c.rank()) fail(coralInvalidUsage, "send to self");
      check_buf(s, n, "sendbuff");
      break;
    case Coll::Recv:
      check_root(c, root, "peer");
      if (root == c.rank()) fail(coralInvalidUsage, "receive from self");
      check_buf(r, n, "recvbuff");
      break;
    default:
      check_buf(s, n, "sendbuff");
      check_buf(r, n, "recvbuff");
  }
  return coral::make_call(coll, s, r, n, t, op, root);
}

coralResult_t blocking(const char* fn, coralComm* comm, Coll coll, const void* s, void* r, size_t n, coralDataType_t t,
                       coralRedOp_t op, int root, void* stream) {
  return guard(comm, fn, [&] {
    coral::Call call = validated(comm, coll, s, r, n, t, op, root);
    int dev = buffers_device(*comm->impl, call, stream);
    // Device buffers with stream NULL follow NCCL: the legacy default stream.
    if (stream || dev >= 0)
      comm->impl->run_on_stream(call, stream, dev >= 0);
    else
      comm->impl->run(call);
  });
}

coralResult_t nonblocking(const char* fn, coralComm* comm, Coll coll, const void* s, void* r, size_t n,
                          coralDataType_t t, coralRedOp_t op, int root, coralRequest_t* req) {
  return guard(comm, fn, [&] {
    if (!req) fail(coralInvalidArgument, "request is NULL");
    *req = nullptr;
    coral::Call call = validated(comm, coll, s, r, n, t, op, root);
    if (buffers_device(*comm->impl, call, nullptr) >= 0)
      fail(coralInvalidArgument,
           "non-blocking calls take host buffers; device buffers go through the blocking "
           "calls with a stream, which return at once");
    *req = new coralRequest{comm->impl->submit(call), comm};
  });
}

}  // namespace

extern "C" {

const char* coralGetErrorString(coralResult_t r) {
  switch (r) {
    case coralSuccess:
      return "no error";
    case coralUnhandledCudaError:
      return "unhandled cuda error";
    case coralSystemError:
      return "unhandled system error";
    case coralInternalError:
      return "internal error";
    case coralInvalidArgument:
      return "invalid argument";
    case coralInvalidUsage:
      return "invalid usage";
    case coralRemoteError:
      return "remote process exited or there was a network error";
    case coralInProgress:
      return "operation in progress";
    case coralTimeout:
      return "operation timed out";
    default:
      return "unknown result code";
  }
}

const char* coralGetLastError(coralComm_t comm) {
  thread_local std::string copy;
  if (!comm)
    copy = t_last_error;
  else if (!comm->ready.load(std::memory_order_acquire))
    copy = "";
  else
    copy = comm->impl ? comm->impl->last_error() : comm->init_error;
  return copy.c_str();
}

coralResult_t coralGetVersion(int* version) {
  return guard(nullptr, "coralGetVersion", [&] {
    if (!version) fail(coralInvalidArgument, "version is NULL");
    *version = CORAL_VERSION_CODE;
  });
}

coralResult_t coralCommDestroy(coralComm_t comm) {
  return guard(nullptr, "coralCommDestroy", [&] {
    if (!comm) fail(coralInvalidArgument, "comm is NULL");
    delete comm;  // the destructor drains queued operations first
  });
}

coralResult_t coralCommAbort(coralComm_t comm) {
  return guard(nullptr, "coralCommAbort", [&] {
    if (!comm) fail(coralInvalidArgument, "comm is NULL");
    if (comm->init.joinable()) comm->init.join();  // a creation still under way ends first
    if (comm->impl) comm->impl->abort("rank " + std::to_string(comm->impl->rank()) + " called coralCommAbort");
    delete comm;
  });
}

coralResult_t coralCommCount(const coralComm_t comm, int* count) {
  return guard(comm, "coralCommCount", [&] {
    if (!count) fail(coralInvalidArgument, "count is NULL");
    *count = need(comm).nranks();
  });
}

coralResult_t coralCommUserRank(const coralComm_t comm, int* rank) {
  return guard(comm, "coralCommUserRank", [&] {
    if (!rank) fail(coralInvalidArgument, "rank is NULL");
    *rank = need(comm).rank();
  });
}

coralResult_t coralCommGetAsyncError(coralComm_t comm, coralResult_t* err) {
  return guard(comm, "coralCommGetAsyncError", [&] {
    if (!err) fail(coralInvalidArgument, "asyncError is NULL");
    if (!comm) fail(coralInvalidArgument, "comm is NULL");
    if (!comm->ready.load(std::memory_order_acquire))
      *err = coralInProgress;
    else if (!comm->impl)
      *err = comm->init_result;
    else
      *err = comm->impl->async_error();
  });
}

coralResult_t coralAllReduce(const void* s, void* r, size_t n, coralDataType_t t, coralRedOp_t op, coralComm_t comm,
                             void* stream) {
  return blocking("coralAllReduce", comm, Coll::AllReduce, s, r, n, t, op, 0, stream);
}
coralResult_t coralReduceScatter(const void* s, void* r, size_t n, coralDataType_t t, coralRedOp_t op, coralComm_t comm,
                                 void* stream) {
  return blocking("coralReduceScatter", comm, Coll::ReduceScatter, s, r, n, t, op, 0, stream);
}
coralResult_t coralAllGather(const void* s, void* r, size_t n, coralDataType_t t, coralComm_t comm, void* stream) {
  return blocking("coralAllGather", comm, Coll::AllGather, s, r, n, t, coralSum, 0, stream);
}
coralResult_t coralBroadcast(const void* s, void* r, size_t n, coralDataType_t t, int root, coralComm_t comm,
                             void* stream) {
  return blocking("coralBroadcast", comm, Coll::Broadcast, s, r, n, t, coralSum, root, stream);
}
coralResult_t coralReduce(const void* s, void* r, size_t n, coralDataType_t t, coralRedOp_t op, int root,
                          coralComm_t comm, void* stream) {
  return blocking("coralReduce", comm, Coll::Reduce, s, r, n, t, op, root, stream);
}
coralResult_t coralSend(const void* s, size_t n, coralDataType_t t, int peer, coralComm_t comm, void* stream) {
  return blocking("coralSend", comm, Coll::Send, s, nullptr, n, t, coralSum, peer, stream);
}
coralResult_t coralRecv(void* r, size_t n, coralDataType_t t, int peer, coralComm_t comm, void* stream) {
  return blocking("coralRecv", comm, Coll::Recv, nullptr, r, n, t, coralSum, peer, stream);
}
coralResult_t coralBarrier(coralComm_t comm) {
  return blocking("coralBarrier", comm, Coll::Barrier, nullptr, nullptr, 0, coralUint8, coralSum, 0, nullptr);
}

coralResult_t coralIAllReduce(const void* s, void* r, size_t n, coralDataType_t t, coralRedOp_t op, coralComm_t comm,
                              coralRequest_t* q) {
  return nonblocking("coralIAllReduce", comm, Coll::AllReduce, s, r, n, t, op, 0, q);
}
coralResult_t coralIReduceScatter(const void* s, void* r, size_t n, coralDataType_t t, coralRedOp_t op,
                                  coralComm_t comm, coralRequest_t* q) {
  return nonblocking("coralIReduceScatter", comm, Coll::ReduceScatter, s, r, n, t, op, 0, q);
}
coralResult_t coralIAllGather(const void* s, void* r, size_t n, coralDataType_t t, coralComm_t comm,
                              coralRequest_t* q) {
  return nonblocking("coralIAllGather", comm, Coll::AllGather, s, r, n, t, coralSum, 0, q);
}
coralResult_t coralIBroadcast(const void* s, void* r, size_t n, coralDataType_t t, int root, coralComm_t comm,
                              coralRequest_t* q) {
  return nonblocking("coralIBroadcast", comm, Coll::Broadcast, s, r, n, t, coralSum, root, q);
}
coralResult_t coralIReduce(const void* s, void* r, size_t n, coralDataType_t t, coralRedOp_t op, int root,
                           coralComm_t comm, coralRequest_t* q) {
  return nonblocking("coralIReduce", comm, Coll::Reduce, s, r, n, t, op, root, q);
}

coralResult_t coralCommQuery(coralComm_t comm, coralQuery_t query, const coralQueryArgs_t* args, char* value,
                             size_t size) {
  return guard(comm, "coralCommQuery", [&] {
    coral::Communicator& c = need(comm);
    if (!value) fail(coralInvalidArgument, "value is NULL");
    if (query != coralQueryTrialPicks && !args) fail(coralInvalidArgument, "args is NULL");
    std::string out;
    if (query == coralQueryTransport) {
      if (args->peer < 0 || args->peer >= c.nranks())
        fail(coralInvalidArgument, fmt::format("args->peer {} is not a rank (there are {})", args->peer, c.nranks()));
      out = c.transport_of(args->peer);
    } else if (query == coralQueryTrialPicks) {
      out = c.trial_picks();
    } else if (query == coralQueryAlgorithm || query == coralQueryChunkBytes || query == coralQueryTuning) {
      static constexpr Coll colls[] = {Coll::AllReduce, Coll::ReduceScatter, Coll::AllGather, Coll::Broadcast,
                                       Coll::Reduce};
      static_assert(std::size(colls) == coralNumCollectives);
      if (args->collective < 0 || args->collective >= coralNumCollectives)
        fail(coralInvalidArgument,
             fmt::format("args->collective {} is not a coralCollective_t", static_cast<int>(args->collective)));
      if (!coral::kernels::valid_dtype(args->datatype))
        fail(coralInvalidArgument,
             fmt::format("args->datatype {} is not a coralDataType_t", static_cast<int>(args->datatype)));
      if (!coral::kernels::op_fits(args->datatype, args->op))
        fail(coralInvalidArgument, fmt::format("args->op {} is not a coralRedOp_t for datatype {}",
                                               static_cast<int>(args->op), coral::kernels::dtype_name(args->datatype)));
      coral::Call call = coral::make_call(colls[args->collective], nullptr, nullptr, args->count, args->datatype,
                                          args->op, args->root);
      const auto info = c.query(call.args, args->device != 0);
      out = query == coralQueryAlgorithm    ? coral::collectives::algo_name(info.algo)
            : query == coralQueryChunkBytes ? std::to_string(info.chunk_bytes)
                                            : (info.tuning ? "1" : "0");
    } else {
      fail(coralInvalidArgument, fmt::format("query {} is not a coralQuery_t", static_cast<int>(query)));
    }
    if (out.size() + 1 > size)
      fail(coralInvalidArgument,
           fmt::format("size {} is too small for the answer ({} bytes with its NUL)", size, out.size() + 1));
    std::memcpy(value, out.c_str(), out.size() + 1);
  });
}

coralResult_t coralIBarrier(coralComm_t comm, coralRequest_t* q) {
  return nonblocking("coralIBarrier", comm, Coll::Barrier, nullptr, nullptr, 0, coralUint8, coralSum, 0, q);
}

coralResult_t coralTest(coralRequest_t request, int* done) {
  coralComm* comm = request ? request->comm : nullptr;
  coralResult_t rc = coralSuccess;
  coralResult_t g = guard(comm, "coralTest", [&] {
    if (!request || !done) fail(coralInvalidArgument, "request or done is NULL");
    std::unique_lock<std::mutex> lock(request->req->mu);
    *done = request->req->done ? 1 : 0;
    if (!*done) return;
    rc = request->req->result;
    std::string err = request->req->error;
    lock.unlock();
    delete request;
    if (rc != coralSuccess) fail(rc, err);
  });
  return g;
}

coralResult_t coralWait(coralRequest_t request) {
  coralComm* comm = request ? request->comm : nullptr;
  return guard(comm, "coralWait", [&] {
    if (!request) fail(coralInvalidArgument, "request is NULL");
    coralResult_t rc;
    std::string err;
    {
      std::unique_lock<std::mutex> lock(request->req->mu);
      request->req->cv.wait(lock, [&] { return request->req->done; });
      rc = request->req->result;
      err = request->req->error;
    }
    delete request;
    if (rc != coralSuccess) fail(rc, err);
  });
}

}  // extern "C"
