#include "optim.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace trainer {

double learning_rate(const OptimConfig& c, int64_t t, int64_t global_batch) {
  double lr = c.lr * static_cast<double>(global_batch) / static_cast<double>(c.lr_batch);
  if (c.warmup > 0 && t < c.warmup) lr *= static_cast<double>(t + 1) / static_cast<double>(c.warmup);
  return lr;
}

template <class T>
Optimizer<T>::Optimizer(OptimConfig c, size_t n) : c_(c), m_(n, T(0)) {
  if (c_.kind == OptimKind::Adam) v_.assign(n, T(0));
}

namespace {

// The update loops are the trainer's largest cost after the GEMMs at small per-rank batches
// (every rank applies the whole update). They are written to vectorise (no reductions, sqrt
// without errno: the file is built with -fno-math-errno) and cloned for AVX2; each element's
// arithmetic is the same in every clone, so replicas stay bit-identical across machines.
#define CORAL_TRAINER_CLONES __attribute__((target_clones("avx2", "default")))

template <class T>
CORAL_TRAINER_CLONES void sgd_update(size_t n, T* __restrict params, const T* __restrict g, T* __restrict m, T lr, T wd,
                                     T mu) {
  for (size_t i = 0; i < n; i++) {
    T gi = g[i] + wd * params[i];
    m[i] = mu * m[i] + gi;
    params[i] -= lr * m[i];
  }
}

// The bias corrections are folded into two scalars (as PyTorch's Adam does): one division and
// one square root per element instead of three divisions, the loop's bottleneck.
template <class T>
CORAL_TRAINER_CLONES void adam_update(size_t n, T* __restrict params, const T* __restrict g, T* __restrict m,
                                      T* __restrict v, T step_size, T wd, T b1, T b2, T inv_sqrt_c2, T eps) {
  for (size_t i = 0; i < n; i++) {
    T gi = g[i] + wd * params[i];
    m[i] = b1 * m[i] + (1 - b1) * gi;
    v[i] = b2 * v[i] + (1 - b2) * gi * gi;
    params[i] -= step_size * m[i] / (std::sqrt(v[i]) * inv_sqrt_c2 + eps);
  }
}

}  // namespace

template <class T>
double Optimizer<T>::step(T* params, T* g, int64_t global_batch, size_t begin, size_t end) {
  if (begin > end || end > m_.size()) throw std::out_of_range("optimizer slice outside the parameters");
  const size_t n = end - begin;
  if (c_.clip > 0 && n != m_.size()) throw std::logic_error("gradient clipping needs the whole gradient");
  params += begin;
  T* m = m_.data() + begin;
  T* v = v_.empty() ? nullptr : v_.data() + begin;
  double norm = 0;
  if (c_.clip > 0) {
    double sq = 0;
    for (size_t i = 0; i < n; i++) sq += static_cast<double>(g[i]) * static_cast<double>(g[i]);
    norm = std::sqrt(sq);
    if (norm > c_.clip) {
      T s = static_cast<T>(c_.clip / norm);
      for (size_t i = 0; i < n; i++) g[i] *= s;
    }
  }
  T lr = static_cast<T>(learning_rate(c_, t_, global_batch));
  T wd = static_cast<T>(c_.weight_decay);
  t_++;
  if (c_.kind == OptimKind::Sgd) {
    sgd_update(n, params, g, m, lr, wd, static_cast<T>(c_.momentum));
    return norm;
  }
  double c1 = 1 - std::pow(c_.beta1, static_cast<double>(t_));
  double c2 = 1 - std::pow(c_.beta2, static_cast<double>(t_));
  adam_update(n, params, g, m, v, static_cast<T>(static_cast<double>(lr) / c1), wd, static_cast<T>(c_.beta1),
              static_cast<T>(c_.beta2), static_cast<T>(1 / std::sqrt(c2)), static_cast<T>(c_.eps));
  return norm;
}

template class Optimizer<float>;
template class Optimizer<double>;

}  // namespace trainer
