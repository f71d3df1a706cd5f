// Hierarchical all-reduce over host subgroups (CollArgs::hosts): (1) inside each host a ring
// reduce-scatter leaves shard j with local member j, for j < k = the smallest host's rank count;
// (2) for each shard j, the ranks holding it (member j of every host) all-reduce it with a ring
// across hosts; (3) inside each host a ring all-gather spreads the shards. Inter-host bytes per
// rank: 2 S (H-1)/(H k) instead of the flat ring's 2 S (P-1)/P over the slowest links, and each
// host's k NICs/links work in parallel. Wins large messages when links inside a host are much
// faster than between hosts. Uneven hosts (3+5+1) shard by the smallest host (k = 1 then: the
// leaders carry everything across).
#include <algorithm>
#include <map>

#include "collectives/builders.h"

namespace coral::collectives {

namespace {

// Renames a sub-group schedule's peers (indices into members) to real ranks, from step `from` on.
void remap(Schedule& s, size_t from, const std::vector<int>& members, bool send_is_recv) {
  for (size_t i = from; i < s.steps.size(); i++) {
    Step& st = s.steps[i];
    if (st.peer >= 0) st.peer = members[static_cast<size_t>(st.peer)];
    if (st.peer_out >= 0) st.peer_out = members[static_cast<size_t>(st.peer_out)];
    if (send_is_recv)
      for (Ref* r : {&st.src, &st.dst, &st.src2})
        if (r->buf == Buf::Send) r->buf = Buf::Recv;
  }
}

}  // namespace

Schedule allreduce_hier(const CollArgs& a) {
  const int p = a.nranks, r = a.rank;
  Schedule s{"hier", p, r, {}, a.count, a.count};
  // Hosts in order of their lowest rank; members in rank order.
  std::map<int, std::vector<int>> by_host;
  std::vector<int> order;
  for (int q = 0; q < p; q++) {
    int h = a.hosts ? (*a.hosts)[static_cast<size_t>(q)] : 0;
    if (by_host[h].empty()) order.push_back(h);
    by_host[h].push_back(q);
  }
  // Members of a host follow the topology's ring where there is one (NUMA domains in turn).
  if (a.order) {
    std::vector<int> pos(static_cast<size_t>(p));
    for (int k = 0; k < p; k++) pos[static_cast<size_t>((*a.order)[static_cast<size_t>(k)])] = k;
    for (auto& [h, m] : by_host)
      std::stable_sort(m.begin(), m.end(),
                       [&](int x, int y) { return pos[static_cast<size_t>(x)] < pos[static_cast<size_t>(y)]; });
  }
  const int my_host = a.hosts ? (*a.hosts)[static_cast<size_t>(r)] : 0;
  const std::vector<int>& local = by_host[my_host];
  const int n = static_cast<int>(local.size());
  const int i = static_cast<int>(std::find(local.begin(), local.end(), r) - local.begin());
  int k = p;
  for (auto& [h, m] : by_host) k = std::min(k, static_cast<int>(m.size()));
  // Shards: k near-equal pieces, then empty blocks for members k..n-1.
  Blocks intra = Blocks::even(a.count, k);
  for (int j = k; j < n; j++) {
    intra.off.push_back(a.count);
    intra.size.push_back(0);
  }
  CollArgs sub = a;
  sub.order = nullptr;  // sub-groups number their members 0..n-1 in the order chosen above
  sub.nranks = n;
  sub.rank = i;
  if (n == 1) {
    copy_chunked(s, {Buf::Send, 0}, {Buf::Recv, 0}, a.count);
  } else {
    size_t mark = s.steps.size();
    ring_reduce_scatter(s, sub, intra, {Buf::Recv, intra.off[static_cast<size_t>(i)]}, false);
    remap(s, mark, local, false);
  }
  const size_t off = intra.off[static_cast<size_t>(i)], len = intra.size[static_cast<size_t>(i)];
  const int hosts = static_cast<int>(order.size());
  if (i < k && hosts > 1) {
    std::vector<int> peers;  // member i of every host, in host order
    int me = 0;
    for (int h : order) {
      if (h == my_host) me = static_cast<int>(peers.size());
      peers.push_back(by_host[h][static_cast<size_t>(i)]);
    }
    CollArgs x = a;
    x.order = nullptr;
    x.nranks = hosts;
    x.rank = me;
    x.count = len;
    Blocks across = Blocks::even(len, hosts);
    for (size_t& o : across.off) o += off;
    size_t mark = s.steps.size();
    ring_reduce_scatter(s, x, across, {Buf::Recv, across.off[static_cast<size_t>(me)]}, false);
    remap(s, mark, peers, true);  // the shard already sits in the receive buffer
    if (a.op == coralAvg && across.size[static_cast<size_t>(me)] > 0)
      s.steps.push_back(
          collectives::scale({Buf::Recv, across.off[static_cast<size_t>(me)]}, across.size[static_cast<size_t>(me)]));
    mark = s.steps.size();
    ring_allgather(s, x, across);
    remap(s, mark, peers, false);
  } else if (i < k && a.op == coralAvg && len > 0 && p > 1) {
    s.steps.push_back(collectives::scale({Buf::Recv, off}, len));
  }
  if (n > 1) {
    size_t mark = s.steps.size();
    ring_allgather(s, sub, intra);
    remap(s, mark, local, false);
  }
  return s;
}

}  // namespace coral::collectives
