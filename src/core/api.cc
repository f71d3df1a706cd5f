// The C API's calls on communicators (creation is in api_init.cc, device helpers in
// api_device.cc); the one guard (guard.h) turns exceptions into coralResult_t + a message.
#include <algorithm>
#include <cstring>
#include <mutex>

#include "base/error.h"
#include "base/log.h"
#include "core/api_checks.h"
#include "core/communicator.h"
#include "core/guard.h"
#include "gpu/runtime.h"
#include "kernels/reduce.h"

namespace {

using coral::fail;
using coral::capi::guard;
using coral::capi::need;
using coral::capi::t_last_error;
using coral::collectives::Coll;

coralResult_t blocking(const char* fn, coralComm* comm, Coll coll, const void* s, void* r, size_t n, coralDataType_t t,
                       coralRedOp_t op, int root, void* stream) {
  return coral::capi::launch(
      fn, comm, [&](coral::Communicator&) { return coral::capi::validated(comm, coll, s, r, n, t, op, root); }, stream);
}

coralResult_t nonblocking(const char* fn, coralComm* comm, Coll coll, const void* s, void* r, size_t n,
                          coralDataType_t t, coralRedOp_t op, int root, coralRequest_t* req) {
  return coral::capi::launch_nb(
      fn, comm, [&](coral::Communicator&) { return coral::capi::validated(comm, coll, s, r, n, t, op, root); }, req);
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
    // A creation still under way may wait on a peer for the whole timeout: give it up first.
    if (comm->cancel_init && !comm->ready.load(std::memory_order_acquire)) comm->cancel_init->cancel();
    if (comm->init.joinable()) comm->init.join();
    if (comm->impl) {
      comm->impl->cancel_store_waits();
      comm->impl->abort("rank " + std::to_string(comm->impl->rank()) + " called coralCommAbort");
    }
    delete comm;
  });
}

coralResult_t coralCommRevoke(coralComm_t comm) {
  return guard(nullptr, "coralCommRevoke", [&] {
    coral::Communicator& c = need(comm);
    c.cancel_store_waits();  // a first device call may be connecting its links
    c.abort("rank " + std::to_string(c.rank()) + " revoked the communicator (coralCommRevoke)");
  });
}

coralResult_t coralCommSetTimeout(coralComm_t comm, int timeoutSeconds) {
  return guard(comm, "coralCommSetTimeout", [&] {
    coral::Communicator& c = need(comm);
    if (timeoutSeconds <= 0)
      fail(coralInvalidArgument, "timeoutSeconds " + std::to_string(timeoutSeconds) + " must be > 0");
    c.set_timeout(timeoutSeconds);
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
    } else if (query == coralQueryAlgorithm || query == coralQueryChunkBytes || query == coralQueryTuning ||
               query == coralQueryEstimateUs) {
      static constexpr Coll colls[] = {Coll::AllReduce, Coll::ReduceScatter, Coll::AllGather, Coll::Broadcast,
                                       Coll::Reduce,    Coll::AllToAll,      Coll::Gather,    Coll::Scatter};
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
      const Coll coll = colls[args->collective];
      if (coll == Coll::Broadcast || coll == Coll::Reduce || coll == Coll::Gather || coll == Coll::Scatter)
        coral::capi::check_root(c, args->root, "args->root");
      coral::capi::check_bytes(args->count, args->datatype, static_cast<size_t>(c.nranks()));
      coral::Call call = coral::make_call(coll, nullptr, nullptr, args->count, args->datatype, args->op, args->root);
      if (query == coralQueryEstimateUs) {
        out = fmt::format("{:.3f}", c.estimate_us(call.args, args->device != 0));
      } else {
        const auto info = c.query(call.args, args->device != 0);
        out = query == coralQueryAlgorithm    ? coral::collectives::algo_name(info.algo)
              : query == coralQueryChunkBytes ? std::to_string(info.chunk_bytes)
                                              : (info.tuning ? "1" : "0");
      }
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

namespace {

// coralTest, after waiting up to `wait_us` for the request to finish.
coralResult_t test_after(const char* name, coralRequest_t request, long wait_us, int* done) {
  coralComm* comm = request ? request->comm() : nullptr;
  coralResult_t rc = coralSuccess;
  coralResult_t g = guard(comm, name, [&] {
    if (!request || !done) fail(coralInvalidArgument, "request or done is NULL");
    if (wait_us < 0) fail(coralInvalidArgument, fmt::format("timeout_us is {}", wait_us));
    // A year stands for "for ever": a longer wait overflows the clock's arithmetic and returns at once.
    constexpr long kYearUs = 365L * 24 * 3600 * 1000000;
    if (wait_us > 0) request->req->wait_done_for(std::chrono::microseconds(std::min(wait_us, kYearUs)));
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

}  // namespace

coralResult_t coralTest(coralRequest_t request, int* done) { return test_after("coralTest", request, 0, done); }

coralResult_t coralWaitFor(coralRequest_t request, long timeout_us, int* done) {
  return test_after("coralWaitFor", request, timeout_us, done);
}

coralResult_t coralSetWaitHook(coralWaitHook_t fn, void* arg) {
  coral::set_wait_hook(fn, arg);  // cannot fail
  return coralSuccess;
}

coralResult_t coralWait(coralRequest_t request) {
  coralComm* comm = request ? request->comm() : nullptr;
  return guard(comm, "coralWait", [&] {
    if (!request) fail(coralInvalidArgument, "request is NULL");
    coralResult_t rc;
    std::string err;
    request->req->wait_done();
    {
      std::lock_guard<std::mutex> lock(request->req->mu);
      rc = request->req->result;
      err = request->req->error;
    }
    delete request;
    if (rc != coralSuccess) fail(rc, err);
  });
}

coralResult_t coralWaitAny(int count, coralRequest_t* requests, int* index) {
  coralRequest_t done = nullptr;
  const coralResult_t g = guard(nullptr, "coralWaitAny", [&] {
    if (!index) fail(coralInvalidArgument, "index is NULL");
    *index = -1;
    if (count < 0) fail(coralInvalidArgument, fmt::format("count is {}", count));
    if (count > 0 && !requests) fail(coralInvalidArgument, "requests is NULL");
    std::vector<const std::shared_ptr<coral::Request>*> reqs(static_cast<size_t>(count));
    for (int i = 0; i < count; i++) reqs[static_cast<size_t>(i)] = requests[i] ? &requests[i]->req : nullptr;
    const int i = coral::wait_any(reqs.data(), reqs.size());
    if (i < 0) return;
    done = requests[i];
    requests[i] = nullptr;
    *index = i;
  });
  if (!done) return g;
  // Its failure is reported as its communicator's last error, as coralWait does.
  return guard(done->comm(), "coralWaitAny", [&] {
    coralResult_t rc;
    std::string err;
    {
      std::lock_guard<std::mutex> lock(done->req->mu);
      rc = done->req->result;
      err = done->req->error;
    }
    delete done;
    if (rc != coralSuccess) fail(rc, err);
  });
}

}  // extern "C"
