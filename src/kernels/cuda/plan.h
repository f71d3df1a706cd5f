// How a kernel splits n elements between scalar and 16-byte vector accesses, decided on the host
// from the pointers' addresses. Plain C++ so unit tests check it without a GPU.
#pragma once
#include <cstddef>
#include <cstdint>

namespace coral::kernels::cuda {

struct VecPlan {
  size_t head = 0;  // scalar elements before the first 16-byte boundary
  size_t body = 0;  // elements moved as 16-byte vectors (a multiple of 16 / es)
  size_t tail = 0;  // scalar elements after
};

// Pointers at any byte address are allowed; vectors need every pointer at the same offset within
// 16 bytes (then one head brings them all to a boundary). Otherwise everything is scalar.
inline VecPlan plan_vectors(const void* const* ptrs, int nptrs, size_t es, size_t n) {
  VecPlan p;
  const uintptr_t mis = reinterpret_cast<uintptr_t>(ptrs[0]) % 16;
  bool same = mis % es == 0;
  for (int i = 1; i < nptrs && same; ++i) same = reinterpret_cast<uintptr_t>(ptrs[i]) % 16 == mis;
  if (!same || es > 16) {
    p.tail = n;
    return p;
  }
  const size_t per = 16 / es;
  p.head = mis ? (16 - mis) / es : 0;
  if (p.head >= n) {
    p.head = n;
    return p;
  }
  p.body = (n - p.head) / per * per;
  p.tail = n - p.head - p.body;
  return p;
}

}  // namespace coral::kernels::cuda
