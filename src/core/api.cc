// The C API. Exactly one guard turns exceptions into coralResult_t + a message.
#include <unistd.h>

#include <cstring>
#include <map>
#include <mutex>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "bootstrap/launcher_env.h"
#include "bootstrap/tcp_store.h"
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
constexpr char kIdMagic[8] = {'C', 'R', 'L', 'I', 'D', '0', '1', 0};

struct IdLayout {
  char magic[8];
  char addr[72];
  uint8_t secret[coral::bootstrap::wire::kSecretBytes];
  char pad[CORAL_UNIQUE_ID_BYTES - 8 - 72 - coral::bootstrap::wire::kSecretBytes];
};
static_assert(sizeof(IdLayout) == CORAL_UNIQUE_ID_BYTES);

double timeout_s() { return coral::config::get_double("CORAL_TIMEOUT"); }

// Communicators created by one rank under one job key are numbered in creation order, which
// every rank follows (as in MPI), so they agree on each communicator's store prefix.
std::string next_prefix(const std::string& job_key, int rank) {
  static std::mutex mu;
  static std::map<std::pair<std::string, int>, int> count;
  std::lock_guard<std::mutex> lock(mu);
  return job_key + "/c" + std::to_string(count[{job_key, rank}]++);
}

coral::Communicator& need(coralComm* comm) {
  if (!comm) fail(coralInvalidArgument, "comm is NULL");
  if (!comm->ready.load(std::memory_order_acquire))
    fail(coralInProgress, "the communicator is still being created (coralCommGetAsyncError says when it is up)");
  if (!comm->impl) fail(comm->init_result, "the communicator's creation failed: " + comm->init_error);
  return *comm->impl;
}

// coralConfig_t, checked: NULL or CORAL_CONFIG_UNDEF_INT fields take the defaults.
struct Options {
  bool blocking = true;
  double timeout_s = 0;  // 0: CORAL_TIMEOUT
};
Options options_of(const coralConfig_t* c) {
  Options o;
  if (!c) return o;
  if (c->size != sizeof(coralConfig_t) || c->magic != CORAL_CONFIG_MAGIC)
    fail(coralInvalidArgument, "config was not set up from CORAL_CONFIG_INITIALIZER (its size or magic is wrong)");
  if (c->version > CORAL_VERSION_CODE)
    fail(coralInvalidArgument,
         fmt::format("config->version {} is newer than this library ({})", c->version, CORAL_VERSION_CODE));
  if (c->blocking != CORAL_CONFIG_UNDEF_INT) {
    if (c->blocking != 0 && c->blocking != 1)
      fail(coralInvalidArgument, fmt::format("config->blocking is {}, not 0 or 1", c->blocking));
    o.blocking = c->blocking == 1;
  }
  if (c->timeoutSeconds != CORAL_CONFIG_UNDEF_INT) {
    if (c->timeoutSeconds <= 0)
      fail(coralInvalidArgument,
           fmt::format("config->timeoutSeconds is {}, not a positive number of seconds", c->timeoutSeconds));
    o.timeout_s = c->timeoutSeconds;
  }
  return o;
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

coralResult_t coralGetUniqueId(coralUniqueId* id) {
  return guard(nullptr, "coralGetUniqueId", [&] {
    if (!id) fail(coralInvalidArgument, "uniqueId is NULL");
    coral::bootstrap::wire::Secret secret = coral::bootstrap::wire::random_secret();
    auto ms = std::chrono::milliseconds(static_cast<long long>(timeout_s() * 1000));
    int port = coral::bootstrap::start_detached_store_server(coral::net::resolve("0.0.0.0", 0), secret, ms);
    IdLayout l{};
    std::memcpy(l.magic, kIdMagic, sizeof kIdMagic);
    std::snprintf(l.addr, sizeof l.addr, "%s:%d", coral::net::default_host_address().c_str(), port);
    std::memcpy(l.secret, secret.data(), secret.size());
    std::memcpy(id->internal, &l, sizeof l);
  });
}

coralResult_t coralCommInitRank(coralComm_t* comm, int nranks, coralUniqueId commId, int rank) {
  return coralCommInitRankConfig(comm, nranks, commId, rank, nullptr);
}

coralResult_t coralCommInitRankConfig(coralComm_t* comm, int nranks, coralUniqueId commId, int rank,
                                      const coralConfig_t* config) {
  bool background = false;
  coralResult_t rc = guard(nullptr, "coralCommInitRankConfig", [&] {
    if (!comm) fail(coralInvalidArgument, "comm is NULL");
    *comm = nullptr;
    if (nranks < 1) fail(coralInvalidArgument, "nranks " + std::to_string(nranks) + " must be >= 1");
    if (rank < 0 || rank >= nranks)
      fail(coralInvalidArgument,
           "rank " + std::to_string(rank) + " is out of range [0, " + std::to_string(nranks) + ")");
    IdLayout l;
    std::memcpy(&l, commId.internal, sizeof l);
    if (std::memcmp(l.magic, kIdMagic, sizeof kIdMagic) != 0 || !memchr(l.addr, 0, sizeof l.addr))
      fail(coralInvalidArgument, "commId was not made by coralGetUniqueId");
    const Options opt = options_of(config);
    background = !opt.blocking;
    coral::bootstrap::wire::Secret secret;
    std::memcpy(secret.data(), l.secret, secret.size());
    // Communicators are numbered in creation order on this rank (next_prefix): a background
    // creation takes its number now, so that one created after it cannot take the same.
    const std::string prefix = next_prefix(coral::bootstrap::wire::secret_to_hex(secret).substr(0, 16), rank);
    const std::string addr = l.addr;
    auto create = [secret, addr, prefix, opt, nranks, rank] {
      const double timeout = opt.timeout_s > 0 ? opt.timeout_s : timeout_s();
      auto ms = std::chrono::milliseconds(static_cast<long long>(timeout * 1000));
      auto store = std::make_shared<coral::bootstrap::TcpStore>(coral::net::resolve(addr), secret, ms);
      return std::make_unique<coral::Communicator>(store, prefix, rank, nranks, opt.timeout_s);
    };
    if (opt.blocking) {
      *comm = new coralComm(create());
      return;
    }
    auto* c = new coralComm();
    c->ready = false;
    c->init = std::thread([c, create] {
      coral::capi::guard(nullptr, "coralCommInitRankConfig", [&] {
        try {
          c->impl = create();
        } catch (const coral::Error& e) {
          c->init_result = e.code();
          c->init_error = e.what();
          throw;
        } catch (const std::exception& e) {
          c->init_result = coralInternalError;
          c->init_error = e.what();
          throw;
        }
      });
      c->ready.store(true, std::memory_order_release);
    });
    *comm = c;
  });
  return rc == coralSuccess && background ? coralInProgress : rc;
}

coralResult_t coralCommInitEnv(coralComm_t* comm) {
  return guard(nullptr, "coralCommInitEnv", [&] {
    if (!comm) fail(coralInvalidArgument, "comm is NULL");
    *comm = nullptr;
    coral::bootstrap::LaunchEnv env = coral::bootstrap::read_launch_env();
    coral::bootstrap::Rendezvous rdv = coral::bootstrap::rendezvous_from_env(env, timeout_s());
    // The rendezvous file goes whether or not the communicator comes up: a failed start must not
    // leave it in /dev/shm.
    struct Unlink {
      const std::string& path;
      ~Unlink() {
        if (!path.empty()) unlink(path.c_str());
      }
    } unlink_file{rdv.cleanup_file};
    auto impl =
        std::make_unique<coral::Communicator>(rdv.store, next_prefix(rdv.job_key, env.rank), env.rank, env.size);
    *comm = new coralComm(std::move(impl));
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
