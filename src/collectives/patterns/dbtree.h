// Double binary tree rank arithmetic (as in the literature on NCCL's trees): tree 0 is the
// in-order binary tree over 1-based ids x = rank + 1 (the height of x is its number of trailing
// zero bits, the root the largest power of two <= P); tree 1 is tree 0 mirrored (P even) or
// shifted by one (P odd), so that with P even every rank is a leaf in one of the two trees and
// sends/receives about the same in both.
#pragma once
#include <vector>

namespace coral::patterns {

struct TreeNode {
  int parent = -1;            // rank, -1 at the root
  std::vector<int> children;  // ranks
};

inline int lowbit(int x) { return x & -x; }

// Node of rank r (0-based) in the in-order binary tree over ids 1..p.
inline TreeNode inorder_node(int r, int p) {
  TreeNode n;
  int x = r + 1, low = lowbit(x);
  for (int c : {x - low / 2, x + low / 2}) {
    if (low == 1) break;
    // A right child beyond p: descend its left spine until in range.
    while (c > p && lowbit(c) > 1) c -= lowbit(c) / 2;
    if (c <= p && c != x) n.children.push_back(c - 1);
  }
  int root = 1;
  while (root * 2 <= p) root *= 2;
  if (x != root) {
    int y = x;
    do {  // climb: the parent of y is y - low or y + low, whichever has the next bit set
      int l = lowbit(y);
      y = (y & (2 * l)) ? y - l : y + l;
    } while (y > p);
    n.parent = y - 1;
  }
  return n;
}

// Rank r's node in tree t (0 or 1) of the double binary tree over p ranks.
inline TreeNode dbtree_node(int r, int p, int t) {
  if (t == 0) return inorder_node(r, p);
  auto to = [&](int q) { return p % 2 == 0 ? p - 1 - q : (q + 1) % p; };        // tree-0 id -> rank
  auto from = [&](int q) { return p % 2 == 0 ? p - 1 - q : (q + p - 1) % p; };  // rank -> tree-0 id
  TreeNode base = inorder_node(from(r), p), n;
  n.parent = base.parent < 0 ? -1 : to(base.parent);
  for (int c : base.children) n.children.push_back(to(c));
  return n;
}

}  // namespace coral::patterns
