#include "mlp.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "blas.h"
#include "rng.h"

namespace trainer {

Layout::Layout(std::vector<int> d) : dims(std::move(d)) {
  if (dims.size() < 2) throw std::invalid_argument("a model needs at least an input and an output width");
  for (int w : dims)
    if (w <= 0) throw std::invalid_argument("layer widths must be positive");
  int L = layers();
  offset.assign(L, 0);
  size.assign(L, 0);
  for (int l = L - 1; l >= 0; l--) {
    offset[l] = nparams;
    size[l] = static_cast<size_t>(dims[l]) * dims[l + 1] + dims[l + 1];
    nparams += size[l];
  }
}

template <class T>
void Mlp<T>::init(T* params, uint64_t seed) const {
  Rng rng(seed);
  for (int l = 0; l < layout_.layers(); l++) {
    size_t fan_in = layout_.dims[l], w = fan_in * layout_.dims[l + 1];
    double bound = std::sqrt(6.0 / static_cast<double>(fan_in));
    T* p = params + layout_.offset[l];
    for (size_t i = 0; i < w; i++) p[i] = static_cast<T>((2 * rng.uniform() - 1) * bound);
    std::fill(p + w, p + layout_.size[l], T(0));
  }
}

template <class T>
void Mlp<T>::forward(const T* params, const T* x, int n) {
  int L = layout_.layers();
  act_.resize(L + 1);
  input_ = x;
  for (int l = 0; l < L; l++) {
    int in = layout_.dims[l], out = layout_.dims[l + 1];
    const T* w = params + layout_.offset[l];
    const T* b = w + static_cast<size_t>(in) * out;
    std::vector<T>& z = act_[l + 1];
    z.resize(static_cast<size_t>(n) * out);
    for (int i = 0; i < n; i++) std::copy(b, b + out, z.data() + static_cast<size_t>(i) * out);
    if (n > 0) gemm(false, false, n, out, in, T(1), act(l), in, w, out, T(1), z.data(), out);
    if (l + 1 < L)
      for (T& v : z) v = v > T(0) ? v : T(0);
  }
}

// Turns the logits into dLoss/dlogits * scale in delta_ and returns the loss sum.
template <class T>
double Mlp<T>::softmax_loss(const int32_t* y, int n, T scale, int64_t* correct) {
  int C = layout_.dims.back();
  const std::vector<T>& z = act_.back();
  delta_.resize(static_cast<size_t>(n) * C);
  double loss = 0;
  for (int i = 0; i < n; i++) {
    const T* zi = z.data() + static_cast<size_t>(i) * C;
    T* di = delta_.data() + static_cast<size_t>(i) * C;
    int arg = static_cast<int>(std::max_element(zi, zi + C) - zi);
    if (correct) *correct += arg == y[i];
    T mx = zi[arg], sum = 0;
    for (int c = 0; c < C; c++) sum += di[c] = std::exp(zi[c] - mx);
    loss += std::log(static_cast<double>(sum)) - static_cast<double>(zi[y[i]] - mx);
    for (int c = 0; c < C; c++) di[c] = (di[c] / sum - (c == y[i] ? T(1) : T(0))) * scale;
  }
  return loss;
}

template <class T>
double Mlp<T>::loss_grad(const T* params, const T* x, const int32_t* y, int n, T scale, T* grad,
                         const std::function<void(int)>& on_layer) {
  forward(params, x, n);
  double loss = softmax_loss(y, n, scale, nullptr);
  if (!grad) return loss;
  for (int l = layout_.layers() - 1; l >= 0; l--) {
    int in = layout_.dims[l], out = layout_.dims[l + 1];
    const T* w = params + layout_.offset[l];
    T* gw = grad + layout_.offset[l];
    T* gb = gw + static_cast<size_t>(in) * out;
    // dW = A^T delta, db = column sums of delta (an empty shard contributes zeros).
    if (n > 0)
      gemm(true, false, in, out, n, T(1), act(l), in, delta_.data(), out, T(0), gw, out);
    else
      std::fill(gw, gw + static_cast<size_t>(in) * out, T(0));
    std::fill(gb, gb + out, T(0));
    for (int i = 0; i < n; i++)
      for (int c = 0; c < out; c++) gb[c] += delta_[static_cast<size_t>(i) * out + c];
    if (on_layer) on_layer(l);
    if (l == 0) break;
    // delta for the layer below: (delta W^T) masked by ReLU'(its output).
    delta_prev_.resize(static_cast<size_t>(n) * in);
    if (n > 0) gemm(false, true, n, in, out, T(1), delta_.data(), out, w, out, T(0), delta_prev_.data(), in);
    // Written without a branch, so that it vectorises: about half the units are off, and the
    // mispredicted branch made this loop most of the non-BLAS time of a step.
    const T* a = act(l);  // l >= 1 here: the ReLU output below
    T* d = delta_prev_.data();
    for (size_t i = 0, m = delta_prev_.size(); i < m; i++) d[i] = a[i] <= T(0) ? T(0) : d[i];
    delta_.swap(delta_prev_);
  }
  return loss;
}

template <class T>
void Mlp<T>::evaluate(const T* params, const T* x, const int32_t* y, int n, double* loss, int64_t* correct) {
  forward(params, x, n);
  *loss += softmax_loss(y, n, T(0), correct);
}

template class Mlp<float>;
template class Mlp<double>;

}  // namespace trainer
