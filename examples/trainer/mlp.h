// A multi-layer perceptron (ReLU hidden layers, softmax cross-entropy) over one flat parameter
// vector, so the gradient is one buffer that buckets slice and the all-reduce reduces in place.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace trainer {

// Layer l maps dims[l] -> dims[l+1]: W_l is dims[l] x dims[l+1] (row-major), then b_l.
// Layers are laid out last first, so backward (which finishes the last layer first) fills the
// gradient from offset 0 upwards and each bucket becomes ready as one contiguous slice.
struct Layout {
  std::vector<int> dims;
  std::vector<size_t> offset;  // start of layer l's W; its b follows
  std::vector<size_t> size;    // W and b together
  size_t nparams = 0;

  explicit Layout(std::vector<int> d);
  int layers() const { return static_cast<int>(dims.size()) - 1; }
};

template <class T>
class Mlp {
 public:
  explicit Mlp(Layout layout) : layout_(std::move(layout)) {}
  const Layout& layout() const { return layout_; }

  // He-uniform weights and zero biases from a seed (rank 0 does this, then broadcasts).
  void init(T* params, uint64_t seed) const;

  // Loss summed over the n samples, and (if grad) the gradient of that sum times `scale`
  // written into grad. on_layer(l) runs as soon as layer l's gradient slice is final.
  double loss_grad(const T* params, const T* x, const int32_t* y, int n, T scale, T* grad,
                   const std::function<void(int)>& on_layer = {});

  // Loss sum and number of correct arg-max predictions for n samples.
  void evaluate(const T* params, const T* x, const int32_t* y, int n, double* loss, int64_t* correct);

 private:
  void forward(const T* params, const T* x, int n);
  double softmax_loss(const int32_t* y, int n, T scale, int64_t* correct);

  // Input of layer l (n x dims[l]): the caller's batch for l = 0, then act_[l]; act_[L] = logits.
  const T* act(int l) const { return l == 0 ? input_ : act_[static_cast<size_t>(l)].data(); }

  Layout layout_;
  const T* input_ = nullptr;
  std::vector<std::vector<T>> act_;  // act_[0] unused
  std::vector<T> delta_, delta_prev_;
};

}  // namespace trainer
