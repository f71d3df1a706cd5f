#include "compat/torch/convert.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/version.h>

#include <cctype>
#include <type_traits>
#include <utility>

namespace coral::torch_backend {

namespace {

// Python's name of a dtype (int16, not Short), the one the caller wrote. torch's own
// getDtypeNames lives in libtorch_python, whose symbols are hidden from torch 2.7 on.
std::string python_name(at::ScalarType s) {
  switch (s) {
    case at::kShort:
      return "int16";
    case at::kComplexHalf:
      return "complex32";
    default: {
      std::string n = c10::toString(s);  // UInt16 -> uint16, QInt8 -> qint8, Float8_e4m3fnuz -> ...
      for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return n;
    }
  }
}

// PREMUL_SUM's tensor factor: a vector of them in torch 1.13, one tensor from torch 2.
template <class S, class = void>
struct HasOneFactor : std::false_type {};
template <class S>
struct HasOneFactor<S, std::void_t<decltype(std::declval<S&>().tensor_factor)>> : std::true_type {};
template <class S>
at::Tensor tensor_factor(const S& s) {
  if constexpr (HasOneFactor<S>::value)
    return s.tensor_factor;
  else
    return s.tensor_factors.empty() ? at::Tensor() : s.tensor_factors.front();
}

}  // namespace

coralDataType_t coral_type(const at::Tensor& t, const char* what) {
  switch (t.scalar_type()) {
    case at::kFloat:
      return coralFloat32;
    case at::kDouble:
      return coralFloat64;
    case at::kHalf:
      return coralFloat16;
    case at::kBFloat16:
      return coralBfloat16;
    case at::kChar:
      return coralInt8;
    case at::kByte:
      return coralUint8;
    case at::kBool:
      return coralUint8;  // as torch's NCCL backend: one byte, 0 or 1
    case at::kInt:
      return coralInt32;
    case at::kLong:
      return coralInt64;
    case at::kComplexFloat:
      return coralFloat32;
    case at::kComplexDouble:
      return coralFloat64;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
    case at::kFloat8_e4m3fn:
      return coralFloat8e4m3;
    case at::kFloat8_e5m2:
      return coralFloat8e5m2;
#endif
    default:
      // Python's name (torch.int16), the one the caller wrote.
      TORCH_CHECK(false, "coral: ", what, " does not support dtype torch.", python_name(t.scalar_type()),
                  " (supported: float16, bfloat16, float32, float64, int8, uint8, int32, int64, bool, complex64, "
                  "complex128)");
  }
}

Elements elements_of(const at::Tensor& t, const char* what) {
  const coralDataType_t type = coral_type(t, what);
  const size_t n = static_cast<size_t>(t.numel());
  return {type, t.is_complex() ? 2 * n : n};
}

RedOp::RedOp(const ::c10d::ReduceOp& op, const at::Tensor& sample, coralComm_t comm, const char* what) : comm_(comm) {
  const bool is_bool = sample.scalar_type() == at::kBool;
  const bool is_complex = sample.is_complex();
  const bool is_float = sample.is_floating_point() || is_complex;
  auto refuse = [&](const char* name, const char* why) {
    TORCH_CHECK(false, "coral: ", what, " with ReduceOp.", name, " ", why, " (dtype ", sample.scalar_type(), ")");
  };
  switch (op.op_) {
    // bool as torch's NCCL backend: SUM is a logical or, PRODUCT a logical and.
    case ::c10d::ReduceOp::SUM:
      op_ = is_bool ? coralMax : coralSum;
      break;
    case ::c10d::ReduceOp::PRODUCT:
      if (is_complex) refuse("PRODUCT", "is not defined element-wise on complex tensors");
      op_ = is_bool ? coralMin : coralProd;
      break;
    case ::c10d::ReduceOp::AVG:
      if (is_bool) refuse("AVG", "is not defined for bool tensors");
      op_ = coralAvg;
      break;
    case ::c10d::ReduceOp::MIN:
      if (is_complex) refuse("MIN", "does not order complex numbers");
      op_ = coralMin;
      break;
    case ::c10d::ReduceOp::MAX:
      if (is_complex) refuse("MAX", "does not order complex numbers");
      op_ = coralMax;
      break;
    case ::c10d::ReduceOp::BAND:
    case ::c10d::ReduceOp::BOR:
    case ::c10d::ReduceOp::BXOR: {
      const char* name = op.op_ == ::c10d::ReduceOp::BAND ? "BAND" : op.op_ == ::c10d::ReduceOp::BOR ? "BOR" : "BXOR";
      if (is_float) refuse(name, "needs an integer or bool tensor");
      op_ = op.op_ == ::c10d::ReduceOp::BAND ? coralBand : op.op_ == ::c10d::ReduceOp::BOR ? coralBor : coralBxor;
      break;
    }
    case ::c10d::ReduceOp::PREMUL_SUM: {
      if (!is_float || is_complex) refuse("PREMUL_SUM", "needs a real floating-point tensor");
      auto* sup = dynamic_cast<::c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
      TORCH_CHECK(sup, "coral: ", what, ": ReduceOp.PREMUL_SUM carries no factor");
      at::Tensor factor;
      coralScalarResidence_t residence = coralScalarHostImmediate;
      const at::Tensor given = tensor_factor(*sup);
      if (!given.defined()) {
        factor = at::scalar_tensor(sup->double_factor, sample.options().device(at::kCPU));
      } else if (sample.is_cuda() && given.is_cuda()) {
        // Read by the call, in stream order: held (factor_) until the call is queued.
        factor = factor_ = given.to(sample.scalar_type()).contiguous();
        residence = coralScalarDevice;
      } else {
        // A host call reads it now, through a synchronous copy: no stream to order it after.
        factor = given.to(at::kCPU, sample.scalar_type()).contiguous();
      }
      const coralResult_t r =
          coralRedOpCreatePreMulSum(&op_, factor.data_ptr(), coral_type(sample, what), residence, comm);
      TORCH_CHECK(r == coralSuccess, "coral: ", what, ": PREMUL_SUM: ", coral_error(comm, r));
      created_ = true;
      break;
    }
    default:
      TORCH_CHECK(false, "coral: ", what, ": unknown ReduceOp ", static_cast<int>(op.op_));
  }
}

Finish RedOp::holding(Finish f) const {
  if (!factor_.defined()) return f;
  return [f = std::move(f), factor = factor_] {
    if (f) f();
  };
}

RedOp::~RedOp() {
  if (created_) coralRedOpDestroy(op_, comm_);
}

std::string coral_error(coralComm_t comm, coralResult_t r) {
  const char* detail = coralGetLastError(comm);
  std::string s = coralGetErrorString(r);
  if (detail && *detail) s += std::string(": ") + detail;
  return s;
}

}  // namespace coral::torch_backend
