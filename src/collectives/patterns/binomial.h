// Binomial tree rank arithmetic, relative to a root: vr = (rank - root) mod P. The parent of vr
// clears its lowest set bit; its children add each smaller power of two that stays below P.
// Depth ceil(log2 P); the root's first child heads the largest subtree.
#pragma once
#include <vector>

namespace coral::patterns {

struct Binomial {
  int parent = -1;            // real rank, -1 at the root
  std::vector<int> children;  // real ranks, largest subtree first
  Binomial(int rank, int root, int nranks) {
    int vr = (rank - root + nranks) % nranks;
    int top = 1;
    while (top * 2 < nranks) top *= 2;
    int low = vr ? vr & -vr : top * 2;
    if (vr) parent = (vr - low + root) % nranks;
    for (int m = low / 2; m >= 1; m /= 2)
      if (vr + m < nranks) children.push_back((vr + m + root) % nranks);
  }
};

}  // namespace coral::patterns
