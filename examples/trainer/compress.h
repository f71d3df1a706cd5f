// Gradient compression with error feedback (--compress). A rank sends a small summary of its
// gradient plus the residual it left out before, so nothing is dropped, only delayed (the sum of
// what went out plus the residual equals the sum of what came in). PowerSGD (Vogels et al.,
// 2019, as PyTorch's powerSGD_hook) sends rank-R factors of each weight matrix, warm-started from
// the last step; top-k sends the largest fraction F of the entries as (index, value) pairs by
// all-gather-v. Biases and matrices too small to gain from factors travel dense, in the same
// all-reduce as PowerSGD's first factor.
#pragma once
#include <coral/coral.h>

#include <cstdint>
#include <string>
#include <vector>

#include "mlp.h"

namespace trainer {

struct Compression {
  enum Kind { None, PowerSgd, TopK } kind = None;
  int rank = 0;         // powersgd:R
  double fraction = 0;  // topk:F
};
// "none", "powersgd:R" (R >= 1) or "topk:F" (0 < F <= 1); throws naming what is wrong.
Compression parse_compression(const std::string& s);
std::string to_string(const Compression& c);

template <class T>
class Compressor {
 public:
  Compressor(coralComm_t comm, const Layout& layout, Compression c, uint64_t seed);
  // g: this rank's share of the global mean gradient (the shares of all ranks sum to it). On
  // return g holds the decompressed sum, the same on every rank; the residual is kept for the
  // next call. Throws coral::error when a collective fails.
  void reduce(T* g);
  // Bytes this rank contributes to collectives per call (a dense all-reduce: nparams * sizeof(T)).
  size_t bytes_per_step() const;
  const std::vector<T>& residual() const { return err_; }
  size_t factored_layers() const { return factors_.size(); }

 private:
  struct Factor {
    int layer;
    size_t n, m;        // W is n x m
    size_t p_at, q_at;  // where its P (n x R) and Q (m x R) start in pbuf_ and q_
  };
  struct Slice {
    size_t at, len;
  };
  void powersgd(T* g);
  void revive_q();
  void topk(T* g);
  void all_reduce(std::vector<T>& v);

  coralComm_t comm_;
  Layout layout_;
  Compression c_;
  uint64_t seed_, calls_ = 0;
  int nranks_ = 1;
  std::vector<T> err_;
  std::vector<Factor> factors_;
  std::vector<Slice> dense_;
  size_t dense_len_ = 0;
  std::vector<T> pbuf_, q_, approx_;  // pbuf_: the dense slices, then every P
  size_t k_ = 0;                      // top-k: entries each rank sends
  std::vector<uint32_t> idx_, all_idx_;
  std::vector<T> val_, all_val_, sample_;
};

// Orthonormalises the r columns of the row-major n x r matrix a (Gram-Schmidt, twice for
// stability); a column that is dependent on the ones before it becomes zero.
template <class T>
void orthonormalize(T* a, size_t n, size_t r);

}  // namespace trainer
