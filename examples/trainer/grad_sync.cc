#include "grad_sync.h"

#include <coral/coral.hpp>

#include <chrono>
#include <stdexcept>

#include "kernels/cpu/half.h"

namespace trainer {

Wire parse_wire(const std::string& s) {
  if (s == "same" || s == "fp32" || s == "fp64") return Wire::Same;
  if (s == "bf16") return Wire::Bf16;
  if (s == "fp16") return Wire::Fp16;
  throw std::invalid_argument("--grad-comm must be fp32, bf16 or fp16, not '" + s + "'");
}

template <class T>
GradSync<T>::GradSync(coralComm_t comm, const Layout& layout, size_t bucket_bytes, Wire wire, int slots)
    : comm_(comm), wire_(wire), slots_(static_cast<size_t>(slots)), layout_(layout) {
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
void GradSync<T>::compress(const Compression& c, uint64_t seed) {
  if (c.kind == Compression::None) return;
  if (wire_ != Wire::Same) throw std::invalid_argument("--compress cannot be combined with --grad-comm bf16/fp16");
  comp_ = std::make_unique<Compressor<T>>(comm_, layout_, c, seed);
  blocking_ = true;
}

template <class T>
size_t GradSync<T>::bytes_per_step() const {
  if (comp_) return comp_->bytes_per_step();
  return layout_.nparams * (wire_ == Wire::Same ? sizeof(T) : 2);
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
  uint16_t* w = s.wire.data() + b.begin;
  const T* g = s.grad + b.begin;
  bool bf = wire_ == Wire::Bf16;
  for (size_t i = 0; i < b.end - b.begin; i++) {
    float f = static_cast<float>(g[i]);
    w[i] = bf ? coral::kernels::float_to_bf16(f) : coral::kernels::float_to_half(f);
  }
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
    auto t0 = std::chrono::steady_clock::now();
    coralResult_t rc = coralAllReduce(buf, buf, n, t, coralSum, comm_, nullptr);
    wait_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
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
  auto t0 = std::chrono::steady_clock::now();
  if (comp_) {  // (--elastic is refused with --compress: a failure here ends the run)
    comp_->reduce(s.grad);
    wait_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return;
  }
  coralResult_t first = coralSuccess;
  for (coralRequest_t r : s.reqs) {  // complete every request even after a failure
    coralResult_t rc = coralWait(r);
    if (first == coralSuccess) first = rc;
  }
  s.reqs.clear();
  wait_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  coral::check(first, comm_);
  if (wire_ == Wire::Same) return;
  bool bf = wire_ == Wire::Bf16;
  for (size_t i = 0; i < s.wire.size(); i++)
    s.grad[i] =
        static_cast<T>(bf ? coral::kernels::bf16_to_float(s.wire[i]) : coral::kernels::half_to_float(s.wire[i]));
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
