#include "grad_sync.h"

#include <coral/coral.hpp>

#include <bit>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "common.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace trainer {
namespace {

// The 16-bit wire formats, both rounded to nearest even as Coral's own conversions are, so a
// gradient packed here reduces as if Coral had cast it. bf16 is float's top half; fp16 goes
// through the compiler's _Float16. The trainer uses only Coral's public API, so it keeps its own.
uint16_t to_bf16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // NaN stays NaN
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
float from_bf16(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }
uint16_t to_fp16(float f) { return std::bit_cast<uint16_t>(static_cast<_Float16>(f)); }
float from_fp16(uint16_t h) { return static_cast<float>(std::bit_cast<_Float16>(h)); }

#if defined(__x86_64__)
// The F16C instructions round as to_fp16 does, and are several times faster on gradients, whose
// many tiny values take the software conversion's subnormal branch: --grad-comm fp16 ran at
// half bf16's speed without them.
__attribute__((target("avx,f16c"))) void pack_f16c(const float* g, uint16_t* w, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(w + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(g + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; i++) w[i] = to_fp16(g[i]);
}
__attribute__((target("avx,f16c"))) void unpack_f16c(const uint16_t* w, float* g, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(g + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + i))));
  for (; i < n; i++) g[i] = from_fp16(w[i]);
}
const bool kF16c = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
#endif

template <class T>
void pack16(const T* g, uint16_t* w, size_t n, Wire wire) {
  if (wire == Wire::Bf16) {
    for (size_t i = 0; i < n; i++) w[i] = to_bf16(static_cast<float>(g[i]));
    return;
  }
#if defined(__x86_64__)
  if constexpr (std::is_same_v<T, float>)
    if (kF16c) return pack_f16c(g, w, n);
#endif
  for (size_t i = 0; i < n; i++) w[i] = to_fp16(static_cast<float>(g[i]));
}

template <class T>
void unpack16(const uint16_t* w, T* g, size_t n, Wire wire) {
  if (wire == Wire::Bf16) {
    for (size_t i = 0; i < n; i++) g[i] = static_cast<T>(from_bf16(w[i]));
    return;
  }
#if defined(__x86_64__)
  if constexpr (std::is_same_v<T, float>)
    if (kF16c) return unpack_f16c(w, g, n);
#endif
  for (size_t i = 0; i < n; i++) g[i] = static_cast<T>(from_fp16(w[i]));
}

}  // namespace

Wire parse_wire(const std::string& s) {
  if (s == "same" || s == "fp32" || s == "fp64") return Wire::Same;
  if (s == "bf16") return Wire::Bf16;
  if (s == "fp16") return Wire::Fp16;
  throw std::invalid_argument("--grad-comm must be fp32, bf16 or fp16, not '" + s + "'");
}

template <class T>
GradSync<T>::GradSync(coralComm_t comm, const Layout& layout, size_t bucket_bytes, Wire wire, int slots)
    : comm_(comm), wire_(wire), slots_(static_cast<size_t>(slots)), nparams_(layout.nparams) {
  // Walk layers in the order backward finishes them (last first = increasing flat offset).
  size_t elem = wire == Wire::Same ? sizeof(T) : 2;
  for (int l = layout.layers() - 1; l >= 0; l--) {
    size_t b = layout.offset[l], e = b + layout.size[l];
    if (!buckets_.empty() && (buckets_.back().end - buckets_.back().begin) * elem < bucket_bytes) {
      buckets_.back().end = e;
      buckets_.back().last_layer = l;
    } else {
      buckets_.push_back({b, e, l});
    }
  }
  if (wire != Wire::Same)
    for (Slot& s : slots_) s.wire.resize(layout.nparams);
}

template <class T>
void GradSync<T>::compress(const Compression& c, const Layout& layout, uint64_t seed) {
  if (c.kind == Compression::None) return;
  if (wire_ != Wire::Same) throw std::invalid_argument("--compress cannot be combined with --grad-comm bf16/fp16");
  comp_ = std::make_unique<Compressor<T>>(comm_, layout, c, seed);
  blocking_ = true;
}

template <class T>
size_t GradSync<T>::bytes_per_step() const {
  if (comp_) return comp_->bytes_per_step();
  return nparams_ * (wire_ == Wire::Same ? sizeof(T) : 2);
}

template <class T>
void GradSync<T>::begin(int slot, T* grad) {
  Slot& s = slots_.at(static_cast<size_t>(slot));
  if (!s.reqs.empty()) throw std::logic_error("gradient slot reused before its all-reduce finished");
  s.grad = grad;
  s.next = 0;
}

template <class T>
void GradSync<T>::encode(Slot& s, const Bucket& b) {
  pack16(s.grad + b.begin, s.wire.data() + b.begin, b.end - b.begin, wire_);
}

template <class T>
void GradSync<T>::launch(Slot& s, const Bucket& b) {
  size_t n = b.end - b.begin;
  void* buf = s.grad + b.begin;
  coralDataType_t t = coral::datatype_of<T>();
  if (wire_ != Wire::Same) {
    encode(s, b);
    buf = s.wire.data() + b.begin;
    t = wire_ == Wire::Bf16 ? coralBfloat16 : coralFloat16;
  }
  if (blocking_) {
    const auto t0 = Clock::now();
    coralResult_t rc = coralAllReduce(buf, buf, n, t, coralSum, comm_, nullptr);
    wait_s_ += since(t0);
    coral::check(rc, comm_);
    return;
  }
  coralRequest_t r;
  coral::check(coralIAllReduce(buf, buf, n, t, coralSum, comm_, &r), comm_);
  s.reqs.push_back(r);
}

template <class T>
void GradSync<T>::layer_ready(int slot, int layer) {
  if (blocking_) return;
  Slot& s = slots_.at(static_cast<size_t>(slot));
  while (s.next < buckets_.size() && buckets_[s.next].last_layer >= layer) launch(s, buckets_[s.next++]);
}

template <class T>
void GradSync<T>::launch_rest(int slot) {
  Slot& s = slots_.at(static_cast<size_t>(slot));
  if (comp_) return;
  while (s.next < buckets_.size()) launch(s, buckets_[s.next++]);
}

template <class T>
void GradSync<T>::wait(int slot) {
  Slot& s = slots_.at(static_cast<size_t>(slot));
  const auto t0 = Clock::now();
  if (comp_) {  // (--elastic is refused with --compress: a failure here ends the run)
    comp_->reduce(s.grad);
    wait_s_ += since(t0);
    return;
  }
  coralResult_t first = coralSuccess;
  for (coralRequest_t r : s.reqs) {  // complete every request even after a failure
    coralResult_t rc = coralWait(r);
    if (first == coralSuccess) first = rc;
  }
  s.reqs.clear();
  wait_s_ += since(t0);
  coral::check(first, comm_);
  if (wire_ == Wire::Same) return;
  unpack16(s.wire.data(), s.grad, s.wire.size(), wire_);
}

template <class T>
void GradSync<T>::set_shards(int rank, int size) {
  const size_t p = static_cast<size_t>(size);
  rank_ = static_cast<size_t>(rank);
  shard_counts_.assign(p, nparams_ / p);
  shard_displs_.assign(p, 0);
  for (size_t r = 0; r < p; r++) {
    if (r < nparams_ % p) shard_counts_[r]++;
    if (r > 0) shard_displs_[r] = shard_displs_[r - 1] + shard_counts_[r - 1];
  }
}

template <class T>
void GradSync<T>::reduce_scatter(T* grad) {
  const auto t0 = Clock::now();
  coralResult_t rc = coralReduceScatterv(grad, grad + shard_begin(), shard_counts_.data(), coral::datatype_of<T>(),
                                         coralSum, comm_, nullptr);
  wait_s_ += since(t0);
  coral::check(rc, comm_);
}

template <class T>
void GradSync<T>::all_gather(T* data, bool timed) {
  const auto t0 = Clock::now();
  coralResult_t rc = coralAllGatherv(data + shard_begin(), shard_counts_[rank_], data, shard_counts_.data(),
                                     shard_displs_.data(), coral::datatype_of<T>(), comm_, nullptr);
  if (timed) wait_s_ += since(t0);
  coral::check(rc, comm_);
}

template <class T>
void GradSync<T>::reset(coralComm_t comm) {
  for (Slot& s : slots_) {
    for (coralRequest_t r : s.reqs) coralWait(r);
    s.reqs.clear();
    s.next = 0;
  }
  comm_ = comm;
}

template class GradSync<float>;
template class GradSync<double>;

}  // namespace trainer
