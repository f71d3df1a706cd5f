#include "compress.h"

#include <fmt/format.h>
#include <coral/coral.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>

#include "blas.h"
#include "rng.h"

namespace trainer {

Compression parse_compression(const std::string& s) {
  Compression c;
  if (s == "none") return c;
  const size_t colon = s.find(':');
  const std::string kind = s.substr(0, colon), arg = colon == std::string::npos ? "" : s.substr(colon + 1);
  size_t used = 0;
  if (kind == "powersgd") {
    c.kind = Compression::PowerSgd;
    try {
      c.rank = std::stoi(arg, &used);
    } catch (const std::exception&) {}
    if (used == 0 || used != arg.size() || c.rank < 1)
      throw std::invalid_argument(fmt::format("--compress '{}': R must be a whole number of at least 1", s));
  } else if (kind == "topk") {
    c.kind = Compression::TopK;
    try {
      c.fraction = std::stod(arg, &used);
    } catch (const std::exception&) {}
    if (used == 0 || used != arg.size() || !(c.fraction > 0 && c.fraction <= 1))
      throw std::invalid_argument(fmt::format("--compress '{}': F must be a fraction in (0, 1]", s));
  } else {
    throw std::invalid_argument(
        fmt::format("--compress '{}': the method must be powersgd:R, topk:F or none, not '{}'", s, kind));
  }
  return c;
}

std::string to_string(const Compression& c) {
  if (c.kind == Compression::PowerSgd) return fmt::format("powersgd:{}", c.rank);
  if (c.kind == Compression::TopK) return fmt::format("topk:{:g}", c.fraction);
  return "none";
}

template <class T>
void orthonormalize(T* a, size_t n, size_t r) {
  for (size_t j = 0; j < r; j++) {
    double before = 0;
    for (size_t k = 0; k < n; k++) before += static_cast<double>(a[k * r + j]) * a[k * r + j];
    for (int pass = 0; pass < 2; pass++)
      for (size_t i = 0; i < j; i++) {
        double dot = 0;
        for (size_t k = 0; k < n; k++) dot += static_cast<double>(a[k * r + i]) * a[k * r + j];
        for (size_t k = 0; k < n; k++) a[k * r + j] -= static_cast<T>(dot) * a[k * r + i];
      }
    double norm = 0;
    for (size_t k = 0; k < n; k++) norm += static_cast<double>(a[k * r + j]) * a[k * r + j];
    // What is left of a column in the span of the others is rounding noise: normalising it
    // would make a direction that is not orthogonal to them.
    const double tol = sizeof(T) == 4 ? 1e-3 : 1e-6;
    const T inv = norm > tol * tol * before && norm > 0 ? static_cast<T>(1 / std::sqrt(norm)) : T(0);
    for (size_t k = 0; k < n; k++) a[k * r + j] *= inv;
  }
}

template <class T>
Compressor<T>::Compressor(coralComm_t comm, const Layout& layout, Compression c, uint64_t seed)
    : comm_(comm), layout_(layout), c_(c), seed_(seed), err_(layout.nparams, T(0)) {
  coral::check(coralCommCount(comm, &nranks_), comm);
  if (c.kind == Compression::TopK) {
    k_ = std::max<size_t>(1, static_cast<size_t>(std::ceil(c.fraction * static_cast<double>(layout.nparams))));
    return;
  }
  if (c.kind != Compression::PowerSgd) return;
  const size_t r = static_cast<size_t>(c.rank);
  size_t p_len = 0, q_len = 0;
  for (int l = 0; l < layout.layers(); l++) {
    const size_t n = static_cast<size_t>(layout.dims[l]), m = static_cast<size_t>(layout.dims[l + 1]);
    const size_t w = layout.offset[l];
    // Factors pay only when they are smaller than the matrix (PyTorch's rule too).
    if ((n + m) * r < n * m) {
      factors_.push_back({l, n, m, p_len, q_len});
      p_len += n * r;
      q_len += m * r;
      dense_.push_back({w + n * m, m});
    } else {
      dense_.push_back({w, n * m + m});
    }
  }
  for (const Slice& s : dense_) dense_len_ += s.len;
  pbuf_.resize(dense_len_ + p_len);
  q_.resize(q_len);
  // The same start on every rank: Q is never exchanged before the first all-reduce of it.
  Rng rng(seed ^ 0x9f0e7d1c2b3a4958ULL);
  for (T& v : q_) v = static_cast<T>(2 * rng.uniform() - 1);
}

template <class T>
size_t Compressor<T>::bytes_per_step() const {
  if (c_.kind == Compression::PowerSgd) return (pbuf_.size() + q_.size()) * sizeof(T);
  if (c_.kind == Compression::TopK) return k_ * (sizeof(uint32_t) + sizeof(T));
  return layout_.nparams * sizeof(T);
}

template <class T>
void Compressor<T>::all_reduce(std::vector<T>& v) {
  if (v.empty()) return;
  coral::check(coralAllReduce(v.data(), v.data(), v.size(), coral::datatype_of<T>(), coralSum, comm_, nullptr), comm_);
}

template <class T>
void Compressor<T>::reduce(T* g) {
  for (size_t i = 0; i < err_.size(); i++) g[i] += err_[i];
  if (c_.kind == Compression::PowerSgd)
    powersgd(g);
  else if (c_.kind == Compression::TopK)
    topk(g);
}

// A column of P that orthonormalisation zeroed (the matrix had lower rank that step) leaves a
// zero column in Q, and a warm start would keep it zero for good: it gets fresh random values,
// drawn alike on every rank (Q is the same everywhere after its all-reduce).
template <class T>
void Compressor<T>::revive_q() {
  const size_t r = static_cast<size_t>(c_.rank);
  calls_++;
  for (const Factor& f : factors_) {
    T* q = q_.data() + f.q_at;
    for (size_t j = 0; j < r; j++) {
      bool zero = true;
      for (size_t k = 0; k < f.m && zero; k++) zero = q[k * r + j] == T(0);
      if (!zero) continue;
      Rng rng(seed_ ^ (calls_ * 0x9e3779b97f4a7c15ULL) ^ (f.q_at + j));
      for (size_t k = 0; k < f.m; k++) q[k * r + j] = static_cast<T>(2 * rng.uniform() - 1);
    }
  }
}

// On entry g = M, this rank's gradient share plus its residual. Each matrix's sum over ranks is
// approximated by P Q^T with P = orth(sum M Q_old) and Q = sum M^T P; this rank keeps
// M - P Q^T / nranks, so the residuals of all ranks sum to what the approximation missed.
template <class T>
void Compressor<T>::powersgd(T* g) {
  const int r = c_.rank;
  size_t at = 0;
  for (const Slice& s : dense_) {
    std::copy(g + s.at, g + s.at + s.len, pbuf_.data() + at);
    at += s.len;
  }
  revive_q();
  for (const Factor& f : factors_)
    gemm(false, false, static_cast<int>(f.n), r, static_cast<int>(f.m), T(1), g + layout_.offset[f.layer],
         static_cast<int>(f.m), q_.data() + f.q_at, r, T(0), pbuf_.data() + dense_len_ + f.p_at, r);
  all_reduce(pbuf_);
  at = 0;
  for (const Slice& s : dense_) {
    std::copy(pbuf_.data() + at, pbuf_.data() + at + s.len, g + s.at);
    std::fill(err_.begin() + static_cast<ptrdiff_t>(s.at), err_.begin() + static_cast<ptrdiff_t>(s.at + s.len), T(0));
    at += s.len;
  }
  for (const Factor& f : factors_) {
    T* p = pbuf_.data() + dense_len_ + f.p_at;
    orthonormalize(p, f.n, static_cast<size_t>(r));
    gemm(true, false, static_cast<int>(f.m), r, static_cast<int>(f.n), T(1), g + layout_.offset[f.layer],
         static_cast<int>(f.m), p, r, T(0), q_.data() + f.q_at, r);
  }
  all_reduce(q_);
  const T share = T(1) / static_cast<T>(nranks_);
  for (const Factor& f : factors_) {
    const size_t w = layout_.offset[f.layer], nm = f.n * f.m;
    approx_.resize(nm);
    gemm(false, true, static_cast<int>(f.n), static_cast<int>(f.m), r, T(1), pbuf_.data() + dense_len_ + f.p_at, r,
         q_.data() + f.q_at, r, T(0), approx_.data(), static_cast<int>(f.m));
    for (size_t i = 0; i < nm; i++) {
      err_[w + i] = g[w + i] - approx_[i] * share;
      g[w + i] = approx_[i];
    }
  }
}

// On entry g = M. This rank sends its k largest entries by magnitude (ties to the lower index,
// so every run picks the same) and keeps the rest as its residual; every rank adds up the pairs
// of all ranks in rank order, so the sums agree bit for bit.
template <class T>
void Compressor<T>::topk(T* g) {
  const size_t n = layout_.nparams;
  auto larger = [g](uint32_t a, uint32_t b) {
    const T x = std::abs(g[a]), y = std::abs(g[b]);
    return x > y || (x == y && a < b);
  };
  // Selecting among all n entries costs more than the exchange: a strided sample gives a
  // threshold below which the k largest are unlikely to reach, and only the entries above it are
  // ranked (as Lin et al.'s Deep Gradient Compression does). Every entry at or above the
  // threshold is a candidate, so when there are at least k of them their k largest are exactly
  // the k largest of all; otherwise all entries are ranked.
  const size_t stride = std::max<size_t>(1, n / 4096);
  sample_.clear();
  for (size_t i = 0; i < n; i += stride) sample_.push_back(std::abs(g[i]));
  const size_t want = std::min(sample_.size() - 1, 2 * k_ * sample_.size() / n + 1);
  std::nth_element(sample_.begin(), sample_.begin() + static_cast<ptrdiff_t>(want), sample_.end(), std::greater<T>());
  const T threshold = sample_[want];
  idx_.clear();
  for (size_t i = 0; i < n; i++)
    if (std::abs(g[i]) >= threshold) idx_.push_back(static_cast<uint32_t>(i));
  if (idx_.size() < k_) {
    idx_.resize(n);
    for (size_t i = 0; i < n; i++) idx_[i] = static_cast<uint32_t>(i);
  }
  std::nth_element(idx_.begin(), idx_.begin() + static_cast<ptrdiff_t>(k_ - 1), idx_.end(), larger);
  idx_.resize(k_);
  std::sort(idx_.begin(), idx_.end());
  val_.resize(k_);
  std::copy(g, g + n, err_.begin());
  for (size_t i = 0; i < k_; i++) {
    val_[i] = g[idx_[i]];
    err_[idx_[i]] = T(0);
  }
  const size_t p = static_cast<size_t>(nranks_);
  std::vector<size_t> counts(p, k_), displs(p);
  for (size_t j = 0; j < p; j++) displs[j] = j * k_;
  all_idx_.resize(p * k_);
  all_val_.resize(p * k_);
  coral::check(
      coralAllGatherv(idx_.data(), k_, all_idx_.data(), counts.data(), displs.data(), coralUint32, comm_, nullptr),
      comm_);
  coral::check(coralAllGatherv(val_.data(), k_, all_val_.data(), counts.data(), displs.data(), coral::datatype_of<T>(),
                               comm_, nullptr),
               comm_);
  std::fill(g, g + n, T(0));
  for (size_t i = 0; i < p * k_; i++) {
    if (all_idx_[i] >= n)
      throw std::runtime_error(fmt::format("top-k: a peer sent index {} of a {}-entry gradient", all_idx_[i], n));
    g[all_idx_[i]] += all_val_[i];
  }
}

template class Compressor<float>;
template class Compressor<double>;
template void orthonormalize(float*, size_t, size_t);
template void orthonormalize(double*, size_t, size_t);

}  // namespace trainer
