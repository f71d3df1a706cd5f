// Ring rank arithmetic.
#pragma once

namespace coral::patterns {

inline int ring_next(int rank, int nranks) { return (rank + 1) % nranks; }
inline int ring_prev(int rank, int nranks) { return (rank + nranks - 1) % nranks; }
// ((rank - k) mod nranks) for any k >= 0.
inline int ring_back(int rank, int k, int nranks) { return ((rank - k) % nranks + nranks) % nranks; }

// Recursive doubling over a non-power-of-two group: the first 2*rem ranks pair up (even sends to
// odd) so that a power-of-two group of pof2 ranks remains.
struct FoldedGroup {
  int pof2 = 1;
  int rem = 0;
  explicit FoldedGroup(int nranks) {
    while (pof2 * 2 <= nranks) pof2 *= 2;
    rem = nranks - pof2;
  }
  // Rank in the power-of-two group, or -1 for ranks folded away.
  int new_rank(int rank) const {
    if (rank < 2 * rem) return rank % 2 ? rank / 2 : -1;
    return rank - rem;
  }
  int real_rank(int new_rank) const { return new_rank < rem ? 2 * new_rank + 1 : new_rank + rem; }
};

}  // namespace coral::patterns
