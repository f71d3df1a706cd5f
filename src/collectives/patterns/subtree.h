// Binomial-tree gather and scatter move a subtree's blocks as one span: virtual ranks [v, v + n)
// (vr = (rank - root) mod P, patterns::Binomial's numbering). The root's buffer holds blocks in
// real rank order, so a span that passes real rank P-1 is cut there; each part is cut into
// chunks. Both ends of a link cut the span alike from (v, n), whoever they are.
#pragma once
#include <algorithm>
#include <cstddef>
#include <vector>

namespace coral::patterns {

// Blocks in the subtree of virtual rank v: v's lowest set bit, clipped at P (the root: all P).
inline int subtree_size(int v, int p) { return v == 0 ? p : std::min(v & -v, p - v); }

struct Piece {
  size_t off;   // elements from the start of the span
  size_t n;     // elements
  size_t real;  // where the piece sits in the root's buffer (blocks in real rank order)
};

inline std::vector<Piece> span_pieces(int v, int nblocks, int root, int p, size_t count, size_t chunk) {
  std::vector<Piece> out;
  const size_t total = static_cast<size_t>(nblocks) * count;
  // Virtual rank P - root is real rank 0: the span wraps there.
  const int wrap_v = p - root;
  const size_t cut = v < wrap_v && wrap_v < v + nblocks ? static_cast<size_t>(wrap_v - v) * count : total;
  const size_t start = static_cast<size_t>((v + root) % p) * count;
  for (size_t lo = 0; lo < total;) {
    const size_t end = lo < cut ? cut : total;
    const size_t n = std::min(chunk, end - lo);
    out.push_back({lo, n, lo < cut ? start + lo : lo - cut});
    lo += n;
  }
  return out;
}

}  // namespace coral::patterns
