#include "core/api_checks.h"

#include <fmt/format.h>

#include <thread>

#include "base/error.h"
#include "gpu/runtime.h"
#include "kernels/reduce.h"

namespace coral::capi {

using collectives::Coll;

void check_op_slow(Communicator& c, coralRedOp_t op, coralDataType_t t, Premul& premul) {
  if (op >= coralNumOps && op < coralBand) {
    premul = c.premul_op(op, t);  // throws for a destroyed or foreign op, or another datatype
    return;
  }
  if (!kernels::valid_op(op))
    fail(coralInvalidArgument, "invalid reduction op " + std::to_string(static_cast<int>(op)));
  if (!kernels::op_fits(t, op))
    fail(coralInvalidArgument, fmt::format("op {} is bitwise, for integer types; datatype {} is not one",
                                           kernels::op_name(op), kernels::dtype_name(t)));
}

size_t check_counts(const Communicator& c, const size_t* counts, coralDataType_t t, const char* name) {
  if (!counts) fail(coralInvalidArgument, std::string(name) + " is NULL");
  size_t sum = 0;
  const size_t limit = static_cast<size_t>(PTRDIFF_MAX) / kernels::dtype_size(t);
  for (int q = 0; q < c.nranks(); ++q) {
    if (counts[q] > limit - sum)
      fail(coralInvalidArgument, fmt::format("{}[{}] = {} overflows the addressable size", name, q, counts[q]));
    sum += counts[q];
  }
  return sum;
}

int buffers_device(Communicator& c, const Call& call, void* stream) {
  if (!gpu::usable()) {
    if (stream)
      fail(coralUnhandledCudaError, "a CUDA stream was passed but CUDA is not usable here (" + gpu::why_not() +
                                        "); host buffers take stream NULL");
    return -1;
  }
  const void* bufs[2] = {call.send, call.recv};
  const char* names[2] = {"sendbuff", "recvbuff"};
  int dev[2] = {-2, -2};
  for (int i = 0; i < 2; ++i)
    // A v-collective moves data even where its own count is 0.
    if (bufs[i] && (call.args.count || call.args.v))  // in place: one pointer query, not two
      dev[i] = i == 1 && bufs[1] == bufs[0] ? dev[0] : gpu::device_of(bufs[i]);
  if (dev[0] != -2 && dev[1] != -2 && (dev[0] < 0) != (dev[1] < 0)) {
    const int g = dev[0] < 0 ? 1 : 0;  // the one on the GPU
    fail(coralInvalidArgument, fmt::format("{} is host memory but {} is on GPU {}: pass both on the GPU or both on "
                                           "the host",
                                           names[1 - g], names[g], dev[g]));
  }
  int d = std::max(dev[0], dev[1]);
  if (d < 0) return -1;
  int current = gpu::current_device(), comm_dev = c.gpu_device();
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

Call validated(coralComm* comm, Coll coll, const void* s, void* r, size_t n, coralDataType_t t, coralRedOp_t op,
               int root) {
  Communicator& c = need(comm);
  Premul premul;
  check_type(t);
  if (coll == Coll::AllReduce || coll == Coll::ReduceScatter || coll == Coll::Reduce)
    check_op(c, op, t, premul);
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
      check_buf(s, n, "sendbuff");
      break;
    case Coll::Recv:
      check_root(c, root, "peer");
      check_buf(r, n, "recvbuff");
      break;
    default:
      check_buf(s, n, "sendbuff");
      check_buf(r, n, "recvbuff");
  }
  Call made = make_call(coll, s, r, n, t, op, root);
  if (premul.on) {
    made.premul = premul;
    made.args.op = coralSum;
  }
  // NCCL's in-place layouts; schedules that may then let peers read the send buffer in place
  // (it is never written when apart from the receive buffer) need to know.
  const size_t block = n * kernels::dtype_size(t) * static_cast<size_t>(c.rank());
  made.args.in_place = n && (coll == Coll::ReduceScatter ? r == static_cast<const std::byte*>(s) + block
                             : coll == Coll::AllGather   ? s == static_cast<const std::byte*>(r) + block
                                                         : s == r);
  const size_t p = static_cast<size_t>(c.nranks());
  const bool me = c.rank() == root;
  switch (coll) {
    case Coll::AllReduce:
      check_apart(s, n, r, n, t, made.args.in_place);
      break;
    case Coll::Broadcast:  // only the root has both buffers
    case Coll::Reduce:
      if (me) check_apart(s, n, r, n, t, made.args.in_place);
      break;
    case Coll::ReduceScatter:
      check_apart(s, n * p, r, n, t, made.args.in_place);
      break;
    case Coll::AllGather:
      check_apart(s, n, r, n * p, t, made.args.in_place);
      break;
    default:  // send and receive have one buffer
      break;
  }
  return made;
}

// A host call without a stream reads a device-resident PreMulSum scalar here, on the caller's
// thread: the progress thread must not make the CUDA stream such a read needs (gpu_state.h).
void host_scalar_now(Call& call, void* stream, int dev) {
  if (!call.premul.on || !call.premul.device_scalar || stream || dev >= 0) return;
  gpu::Stream s;
  gpu::copy_async(call.premul.value, call.premul.ptr, kernels::dtype_size(call.args.dtype), s.get());
  s.sync();
  call.premul.device_scalar = false;
}

coralComm* create_in_background(const char* fn, std::function<std::unique_ptr<Communicator>()> create) {
  auto* c = new coralComm();
  c->ready = false;
  c->nonblocking = true;
  c->init = std::thread([c, fn, create = std::move(create)] {
    guard(nullptr, fn, [&] {
      try {
        c->impl = create();
      } catch (const Error& e) {
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
  return c;
}

coralResult_t launch_nb(const char* fn, coralComm* comm, const std::function<Call(Communicator&)>& make,
                        coralRequest_t* req) {
  return guard(comm, fn, [&] {
    if (!req) fail(coralInvalidArgument, "request is NULL");
    *req = nullptr;
    if (group_depth() > 0) {
      const char* why =
          "non-blocking calls are not deferred by groups: call them outside coralGroupStart/End, or use the "
          "blocking form inside the group";
      group_failed(coralInvalidUsage, std::string(fn) + ": " + why);
      fail(coralInvalidUsage, why);
    }
    Communicator& c = need(comm);
    Call call = make(c);
    if (buffers_device(c, call, nullptr) >= 0)
      fail(coralInvalidArgument,
           "non-blocking calls take host buffers; device buffers go through the blocking "
           "calls with a stream, which return at once");
    host_scalar_now(call, nullptr, -1);
    *req = new coralRequest{c.submit(call), comm, comm->alive};
  });
}

}  // namespace coral::capi
