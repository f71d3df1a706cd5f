// Helpers the collectives share: argument checks, flat staging buffers and the copy back.
#pragma once
#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "compat/torch/work.h"

namespace coral::torch_backend::ops_util {

inline const at::Tensor& one(const Tensors& ts, const char* what) {
  TORCH_CHECK(ts.size() == 1, "coral: ", what, " takes one tensor per process, got ", ts.size());
  TORCH_CHECK(ts[0].defined(), "coral: ", what, ": the tensor is undefined");
  return ts[0];
}

inline void same_kind(const at::Tensor& a, const at::Tensor& b, const char* what) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "coral: ", what, ": dtypes differ (", a.scalar_type(), " and ",
              b.scalar_type(), ")");
  TORCH_CHECK(a.device() == b.device(), "coral: ", what, ": tensors on different devices (", a.device(), " and ",
              b.device(), ")");
}

// Issues the same operation as a host request (q set: CPU tensors) or stream-ordered (CUDA
// tensors). The stream alone cannot tell: torch's default stream is NULL, which Coral takes with
// device buffers as NCCL does, the legacy default stream.
template <class Blocking, class NonBlocking>
auto both(Blocking b, NonBlocking n) {
  return [b, n](void* stream, coralRequest_t* q) { return q ? n(q) : b(stream); };
}

// Copies buf back into t when t could not be used in place; keeps both alive until then.
inline Finish copy_back(const at::Tensor& t, const at::Tensor& buf) {
  if (t.is_same(buf)) return [buf] {};
  return [t, buf]() mutable { t.copy_(buf.view(t.sizes())); };
}

// Concatenation of the tensors, flattened (one copy), and the way back.
inline at::Tensor flatten(const Tensors& ts) {
  std::vector<at::Tensor> flat;
  flat.reserve(ts.size());
  for (const auto& t : ts) flat.push_back(t.reshape({-1}));
  return at::cat(flat);
}

inline void unflatten(const at::Tensor& flat, int64_t offset, const Tensors& ts) {
  for (const auto& t : ts) {
    const int64_t n = t.numel();
    const_cast<at::Tensor&>(t).copy_(flat.narrow(0, offset, n).view(t.sizes()));
    offset += n;
  }
}

inline size_t per_element(const at::Tensor& t) { return t.is_complex() ? 2 : 1; }

}  // namespace coral::torch_backend::ops_util
