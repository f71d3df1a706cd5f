// The C API's communicators made from others (split, shrink) and the ops a communicator owns
// (PreMulSum).
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "base/error.h"
#include "core/api_checks.h"
#include "gpu/runtime.h"
#include "kernels/reduce.h"

using coral::fail;
using namespace coral::capi;

extern "C" {

// Children of a non-blocking communicator come up in the background too, and the call returns
// coralInProgress (as NCCL's with a non-blocking config).
coralResult_t coralCommSplit(coralComm_t comm, int color, int key, coralComm_t* newcomm) {
  bool background = false;
  coralResult_t rc = guard(comm, "coralCommSplit", [&] {
    if (!newcomm) fail(coralInvalidArgument, "newcomm is NULL");
    *newcomm = nullptr;
    coral::Communicator& c = need(comm);
    // The exchange over the parent runs now, in the parent's order of calls; only the child's
    // own creation may go to the background.
    std::optional<coral::Communicator::SplitPlan> plan = c.plan_split(color, key);
    if (!plan) return;
    if (comm->nonblocking) {
      background = true;
      auto cancel = std::make_shared<coral::bootstrap::CancelToken>();
      *newcomm = create_in_background("coralCommSplit", c.child_maker(*plan, cancel));
      (*newcomm)->cancel_init = cancel;
      return;
    }
    *newcomm = new coralComm(c.child_maker(*plan, nullptr)());
  });
  return rc == coralSuccess && background ? coralInProgress : rc;
}

coralResult_t coralCommShrink(coralComm_t comm, const int* excludeRanks, int excludeCount, coralComm_t* newcomm) {
  bool background = false;
  coralResult_t rc = guard(comm, "coralCommShrink", [&] {
    if (!newcomm) fail(coralInvalidArgument, "newcomm is NULL");
    *newcomm = nullptr;
    coral::Communicator& c = need(comm);
    if (excludeCount < 0) fail(coralInvalidArgument, fmt::format("excludeCount {} is negative", excludeCount));
    if (excludeCount > 0 && !excludeRanks) fail(coralInvalidArgument, "excludeRanks is NULL with excludeCount > 0");
    std::vector<int> ex(excludeRanks, excludeRanks + excludeCount);
    for (int q : ex)
      if (q < 0 || q >= c.nranks())
        fail(coralInvalidArgument,
             fmt::format("excludeRanks holds {}, which is no rank of this communicator (0..{})", q, c.nranks() - 1));
    std::sort(ex.begin(), ex.end());
    ex.erase(std::unique(ex.begin(), ex.end()), ex.end());
    if (std::binary_search(ex.begin(), ex.end(), c.rank()))
      fail(coralInvalidArgument,
           fmt::format("excludeRanks holds this rank ({}): excluded ranks do not call coralCommShrink", c.rank()));
    auto cancel = comm->nonblocking ? std::make_shared<coral::bootstrap::CancelToken>() : nullptr;
    auto make = c.shrink_maker(ex, cancel);
    if (comm->nonblocking) {
      background = true;
      *newcomm = create_in_background("coralCommShrink", std::move(make));
      (*newcomm)->cancel_init = cancel;
      return;
    }
    *newcomm = new coralComm(make());
  });
  return rc == coralSuccess && background ? coralInProgress : rc;
}

coralResult_t coralCommGetFailedRanks(coralComm_t comm, int* ranks, int* count) {
  return guard(comm, "coralCommGetFailedRanks", [&] {
    if (!count) fail(coralInvalidArgument, "count is NULL");
    if (*count < 0) fail(coralInvalidArgument, fmt::format("*count {} is negative", *count));
    if (*count > 0 && !ranks) fail(coralInvalidArgument, "ranks is NULL with *count > 0");
    const std::vector<int> failed = need(comm).failed_ranks();
    std::copy_n(failed.begin(), std::min(failed.size(), static_cast<size_t>(*count)), ranks);
    *count = static_cast<int>(failed.size());
  });
}

coralResult_t coralRedOpCreatePreMulSum(coralRedOp_t* op, void* scalar, coralDataType_t datatype,
                                        coralScalarResidence_t residence, coralComm_t comm) {
  return guard(comm, "coralRedOpCreatePreMulSum", [&] {
    if (!op) fail(coralInvalidArgument, "op is NULL");
    if (!scalar) fail(coralInvalidArgument, "scalar is NULL");
    coral::Communicator& c = need(comm);
    check_type(datatype);
    if (residence != coralScalarDevice && residence != coralScalarHostImmediate)
      fail(coralInvalidArgument,
           fmt::format("residence {} is not coralScalarDevice (0) or coralScalarHostImmediate (1)",
                       static_cast<int>(residence)));
    const bool device = residence == coralScalarDevice;
    if (device) {
      if (!coral::gpu::usable())
        fail(coralUnhandledCudaError, "residence is coralScalarDevice but CUDA is not usable here (" +
                                          coral::gpu::why_not() + "); host scalars take coralScalarHostImmediate");
      if (coral::gpu::device_of(scalar) < 0)
        fail(coralInvalidArgument, "scalar is host memory but residence is coralScalarDevice");
    }
    *op = c.create_premul(scalar, datatype, device);
  });
}

coralResult_t coralRedOpDestroy(coralRedOp_t op, coralComm_t comm) {
  return guard(comm, "coralRedOpDestroy", [&] { need(comm).destroy_premul(op); });
}

}  // extern "C"
