// Optimizers applied identically on every rank to the averaged gradient.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace trainer {

enum class OptimKind { Sgd, Adam };

struct OptimConfig {
  OptimKind kind = OptimKind::Adam;
  double lr = 1e-3;                               // at the reference batch `lr_batch`
  int64_t lr_batch = 128;                         // linear scaling: lr * global_batch / lr_batch
  int64_t warmup = 0;                             // steps of linear warmup from 0
  double momentum = 0.9;                          // SGD
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // Adam
  double weight_decay = 0;                        // L2, added to the gradient
  double clip = 0;                                // global gradient norm limit; 0 = off
};

// Learning rate at optimizer step t (0-based) for a global batch.
double learning_rate(const OptimConfig& c, int64_t t, int64_t global_batch);

template <class T>
class Optimizer {
 public:
  Optimizer(OptimConfig c, size_t n);
  // One update with gradient g (scaled in place when clipping). Returns g's global norm when
  // clipping is on (0 otherwise: computing it costs a pass over the gradient).
  double step(T* params, T* g, int64_t global_batch) { return step(params, g, global_batch, 0, m_.size()); }
  // The sharded optimizer's update: only parameters [begin, end) move, from the gradient of that
  // slice at g[0..end-begin); the moments elsewhere stay as they are. Clipping needs the whole
  // gradient, so a partial slice refuses it.
  double step(T* params, T* g, int64_t global_batch, size_t begin, size_t end);

  const OptimConfig& config() const { return c_; }
  int64_t steps() const { return t_; }
  // State for checkpoints: step count and the moment vectors (momentum, or Adam's m and v).
  int64_t& steps_ref() { return t_; }
  std::vector<T>& m() { return m_; }
  std::vector<T>& v() { return v_; }

 private:
  OptimConfig c_;
  int64_t t_ = 0;
  std::vector<T> m_, v_;
};

}  // namespace trainer
