#include "optim.h"

#include <algorithm>
#include <cmath>

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

template <class T>
double Optimizer<T>::step(T* params, T* g, int64_t global_batch) {
  size_t n = m_.size();
  double sq = 0;
  for (size_t i = 0; i < n; i++) sq += static_cast<double>(g[i]) * static_cast<double>(g[i]);
  double norm = std::sqrt(sq);
  if (c_.clip > 0 && norm > c_.clip) {
    T s = static_cast<T>(c_.clip / norm);
    for (size_t i = 0; i < n; i++) g[i] *= s;
  }
  T lr = static_cast<T>(learning_rate(c_, t_, global_batch));
  T wd = static_cast<T>(c_.weight_decay);
  t_++;
  if (c_.kind == OptimKind::Sgd) {
    T mu = static_cast<T>(c_.momentum);
    for (size_t i = 0; i < n; i++) {
      T gi = g[i] + wd * params[i];
      m_[i] = mu * m_[i] + gi;
      params[i] -= lr * m_[i];
    }
    return norm;
  }
  T b1 = static_cast<T>(c_.beta1), b2 = static_cast<T>(c_.beta2), eps = static_cast<T>(c_.eps);
  T c1 = static_cast<T>(1 - std::pow(c_.beta1, static_cast<double>(t_)));
  T c2 = static_cast<T>(1 - std::pow(c_.beta2, static_cast<double>(t_)));
  for (size_t i = 0; i < n; i++) {
    T gi = g[i] + wd * params[i];
    m_[i] = b1 * m_[i] + (1 - b1) * gi;
    v_[i] = b2 * v_[i] + (1 - b2) * gi * gi;
    params[i] -= lr * (m_[i] / c1) / (std::sqrt(v_[i] / c2) + eps);
  }
  return norm;
}

template class Optimizer<float>;
template class Optimizer<double>;

}  // namespace trainer
