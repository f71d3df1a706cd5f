// Dissemination barrier: ceil(log2 P) rounds of empty messages to rank+2^k, from rank-2^k.
#include "collectives/builders.h"

namespace coral::collectives {

Schedule barrier_dissemination(const CollArgs& a) {
  const int p = a.nranks, r = a.rank;
  Schedule s{"dissemination", p, r, {}, 0, 0};
  for (int k = 1; k < p; k <<= 1) {
    s.steps.push_back(collectives::send((r + k) % p, {}, 0));
    s.steps.push_back(collectives::recv((r - k % p + p) % p, {}, 0));
  }
  return s;
}

}  // namespace coral::collectives
