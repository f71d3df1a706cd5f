#include "collectives/tuner/cost.h"

#include <algorithm>

namespace coral::collectives {
namespace {

// The link a hop at this distance takes when every rank makes such a hop at once.
LinkModel at(const ClusterModel& m, int distance) {
  if (distance < m.ranks_per_host) return m.intra;
  return {m.inter.alpha, m.inter.beta * std::clamp(m.nic_share, 1, m.ranks_per_host)};
}

int pof2_below(int p) {
  int q = 1;
  while (q * 2 <= p) q *= 2;
  return q;
}

}  // namespace

// 2(P-1) hops of S/P; the ring moves at the pace of its slowest link.
double cost_ring(const ClusterModel& m, double s) {
  const LinkModel& l = m.nranks > m.ranks_per_host ? m.inter : m.intra;
  return 2.0 * (m.nranks - 1) * (l.alpha + s / m.nranks * l.beta);
}

// log2(P) exchanges of S at distances 1, 2, 4, ... (+2 folding hops when P is not a power of 2).
double cost_rd(const ClusterModel& m, double s) {
  int q = pof2_below(m.nranks);
  double t = q < m.nranks ? 2 * (m.intra.alpha + s * m.intra.beta) : 0;
  for (int d = 1; d < q; d *= 2) {
    LinkModel l = at(m, d);
    t += l.alpha + s * l.beta;
  }
  return t;
}

// Halving at distances q/2, q/4, ... carrying S/2, S/4, ...; doubling the same way back.
double cost_rhd(const ClusterModel& m, double s) {
  int q = pof2_below(m.nranks);
  double t = q < m.nranks ? 2 * (m.intra.alpha + s * m.intra.beta) : 0, part = s;
  for (int d = q / 2; d >= 1; d /= 2) {
    part /= 2;
    LinkModel l = at(m, d);
    t += 2 * (l.alpha + part * l.beta);
  }
  return t;
}

// Ring reduce-scatter and all-gather inside a host of n, and a ring of H hosts per shard S/n.
double cost_hier(const ClusterModel& m, double s) {
  int n = std::min(m.ranks_per_host, m.nranks), h = (m.nranks + n - 1) / n;
  double inside = 2.0 * (n - 1) * (m.intra.alpha + s / n * m.intra.beta);
  const LinkModel cross = at(m, n);
  double across = h > 1 ? 2.0 * (h - 1) * (cross.alpha + s / n / h * cross.beta) : 0;
  return inside + across;
}

}  // namespace coral::collectives
