// torch dtypes and ReduceOps as Coral's: what torch's NCCL backend maps them to, with the
// bitwise ops Coral adds and complex tensors as pairs of reals.
#pragma once
#include <coral/coral.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <string>

#include "compat/torch/work.h"

namespace coral::torch_backend {

// The tensor as Coral sees it: complex numbers become two reals, bool becomes uint8.
struct Elements {
  coralDataType_t type;
  size_t count;
};
// Throws a RuntimeError naming the dtype when Coral has no equivalent.
Elements elements_of(const at::Tensor& t, const char* what);
coralDataType_t coral_type(const at::Tensor& t, const char* what);

// A reduction op for one call; destroys a PreMulSum op it created when it goes away.
class RedOp {
 public:
  RedOp(const ::c10d::ReduceOp& op, const at::Tensor& sample, coralComm_t comm, const char* what);
  ~RedOp();
  RedOp(const RedOp&) = delete;
  RedOp& operator=(const RedOp&) = delete;
  coralRedOp_t get() const { return op_; }
  // f, also keeping a device-resident PREMUL_SUM factor alive until it has run: inside a
  // coalesced block the call is queued only at the block's end, and the factor's memory must
  // not be handed to the block's next tensors before.
  Finish holding(Finish f) const;

 private:
  at::Tensor factor_;
  coralRedOp_t op_ = coralSum;
  coralComm_t comm_ = nullptr;
  bool created_ = false;
};

// Coral's last error on comm (or the generic text of r), for exceptions.
std::string coral_error(coralComm_t comm, coralResult_t r);

}  // namespace coral::torch_backend
