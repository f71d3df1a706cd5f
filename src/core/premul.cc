// PreMulSum (as NCCL's): each rank's input is multiplied by the op's scalar, then summed. The
// scaling is one pass before the collective, which then runs as a plain sum: every algorithm
// and transport serves it unchanged.
#include <fmt/format.h>

#include <cstring>

#include "base/error.h"
#include "core/communicator.h"
#include "core/gpu_state.h"
#include "gpu/mem_ops.h"
#include "gpu/runtime.h"
#include "kernels/reduce.h"

namespace coral {

namespace {

// Each communicator of the process takes its own range of handles, so that an op of another
// communicator is recognised as foreign rather than taken for one of ours.
int next_premul_base() {
  static std::atomic<int> next{0};
  constexpr int ranges = (coralBand - coralNumOps) / Communicator::kMaxPremulOps;
  return coralNumOps + (next.fetch_add(1) % ranges) * Communicator::kMaxPremulOps;
}

}  // namespace

size_t Communicator::reduced_elems(const Call& c) const {
  using collectives::Coll;
  const collectives::CollArgs& a = c.args;
  if (a.coll == Coll::ReduceScatter) return a.count * static_cast<size_t>(nranks_);
  if (a.coll == Coll::ReduceScatterv) {
    size_t n = 0;
    for (size_t c : a.v->recv_counts) n += c;
    return n;
  }
  return a.count;
}

coralRedOp_t Communicator::create_premul(const void* scalar, coralDataType_t dtype, bool device_scalar) {
  std::lock_guard<std::mutex> lock(state_mu_);
  if (premul_base_ == 0) premul_base_ = next_premul_base();
  for (int i = 0; i < kMaxPremulOps; ++i) {
    PremulSlot& s = premul_ops_[i];
    if (s.live) continue;
    s = PremulSlot{};
    s.live = true;
    s.dtype = dtype;
    s.scalar.on = true;
    s.scalar.device_scalar = device_scalar;
    if (device_scalar)
      s.scalar.ptr = scalar;
    else
      std::memcpy(s.scalar.value, scalar, kernels::dtype_size(dtype));
    return static_cast<coralRedOp_t>(premul_base_ + i);
  }
  fail(coralInvalidUsage, fmt::format("this communicator already has {} live PreMulSum ops: destroy some with "
                                      "coralRedOpDestroy first",
                                      kMaxPremulOps));
}

void Communicator::destroy_premul(coralRedOp_t op) {
  std::lock_guard<std::mutex> lock(state_mu_);
  const int i = static_cast<int>(op) - premul_base_;
  if (op < coralNumOps || op >= coralBand)
    fail(coralInvalidArgument,
         fmt::format("op {} is a built-in op, not one from coralRedOpCreatePreMulSum", static_cast<int>(op)));
  if (premul_base_ == 0 || i < 0 || i >= kMaxPremulOps)
    fail(coralInvalidArgument, fmt::format("op {} was not created on this communicator", static_cast<int>(op)));
  if (!premul_ops_[i].live)
    fail(coralInvalidArgument, fmt::format("op {} was already destroyed", static_cast<int>(op)));
  premul_ops_[i].live = false;
}

Premul Communicator::premul_op(coralRedOp_t op, coralDataType_t dtype) const {
  std::lock_guard<std::mutex> lock(state_mu_);
  const int i = static_cast<int>(op) - premul_base_;
  if (premul_base_ == 0 || i < 0 || i >= kMaxPremulOps)
    fail(coralInvalidArgument,
         fmt::format("op {} is no op of this communicator (a PreMulSum op of another one?)", static_cast<int>(op)));
  const PremulSlot& s = premul_ops_[i];
  if (!s.live) fail(coralInvalidArgument, fmt::format("op {} was destroyed (coralRedOpDestroy)", static_cast<int>(op)));
  if (s.dtype != dtype)
    fail(coralInvalidArgument, fmt::format("op {} was created for datatype {}, not {}", static_cast<int>(op),
                                           kernels::dtype_name(s.dtype), kernels::dtype_name(dtype)));
  return s.scalar;
}

void Communicator::prescale(Call& c) {
  const size_t n = reduced_elems(c), es = kernels::dtype_size(c.args.dtype);
  if (premul_buf_.size() < n * es) premul_buf_.resize(n * es);
  unsigned char value[8];
  const void* scalar = c.premul.value;
  if (c.premul.device_scalar) {
    // Only stream-ordered calls get here with a device scalar (a host call reads it at its
    // launch), so the progress thread's stream exists: no CUDA object is made here.
    if (!gpu_) fail(coralInternalError, "a device PreMulSum scalar reached a host call unread");
    // Through pinned memory the caller reserved: a copy to pageable memory is synchronous and
    // can wait on the driver lock a caller holds while its stream is parked (gpu_state.h).
    void* pinned = gpu_->scalar.get(es);
    gpu::copy_async(pinned, c.premul.ptr, es, gpu_->stream.get());
    gpu_->stream.sync(gpu_limit());
    std::memcpy(value, pinned, es);
    scalar = value;
  }
  if (n) kernels::active().premul[c.args.dtype](premul_buf_.data(), c.send, n, scalar);
  c.send = premul_buf_.data();
  c.args.in_place = false;
  c.premul.on = false;
}

void Communicator::prescale_device(Call& c) {
  const size_t n = reduced_elems(c), es = kernels::dtype_size(c.args.dtype);
  void* buf = gpu_->premul.get(n * es);  // reserved by the caller (run_on_stream)
  gpu::CudaMemOps mem(gpu_->stream.get(), c.args.dtype, coralSum);
  if (n) mem.premul(buf, c.send, n, c.premul.device_scalar ? c.premul.ptr : c.premul.value, c.premul.device_scalar);
  mem.fence();
  c.send = buf;
  c.args.in_place = false;
  c.premul.on = false;
}

}  // namespace coral
