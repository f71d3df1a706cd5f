#include "topology/rings.h"

#include <algorithm>
#include <limits>
#include <map>

namespace coral::topology {
namespace {

// Cost of placing b right after a in the ring: path class first, then the inverse bandwidth.
double hop_cost(const Topology& t, int a, int b) {
  if (a == b) return 0;
  PathInfo p = t.path(a, b);
  return static_cast<double>(p.type) * 1000.0 + 1.0 / std::max(p.bw, 1e-3);
}

// Best order of one host's ranks (exact Held-Karp up to 12, nearest neighbour beyond): a cycle
// when the host is alone, else an open path (the ring enters and leaves over the network).
std::vector<int> order_host(const Topology& t, const std::vector<RankPlace>& ranks, const std::vector<int>& mine,
                            bool cyclic) {
  size_t n = mine.size();
  if (n <= 2) return mine;
  std::vector<double> costs(n * n);
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) costs[i * n + j] = hop_cost(t, ranks[mine[i]].device, ranks[mine[j]].device);
  auto cost = [&](size_t i, size_t j) { return costs[i * n + j]; };
  if (n <= 12) {
    const double inf = std::numeric_limits<double>::infinity();
    size_t full = size_t{1} << n;
    std::vector<double> best(full * n, inf);
    std::vector<int> from(full * n, -1);
    best[1 * n + 0] = 0;  // start at mine[0]
    for (size_t set = 1; set < full; set += 2)
      for (size_t last = 0; last < n; last++) {
        double c = best[set * n + last];
        if (c == inf) continue;
        for (size_t next = 1; next < n; next++) {
          if (set & (size_t{1} << next)) continue;
          size_t s2 = set | (size_t{1} << next);
          double c2 = c + cost(last, next);
          if (c2 < best[s2 * n + next]) best[s2 * n + next] = c2, from[s2 * n + next] = static_cast<int>(last);
        }
      }
    size_t last = 0;
    double total = inf;
    for (size_t l = 1; l < n; l++)
      if (double c = best[(full - 1) * n + l] + (cyclic ? cost(l, 0) : 0); c < total) total = c, last = l;
    std::vector<int> order;
    for (size_t set = full - 1; last != 0 || set != 1;) {
      order.push_back(mine[last]);
      int prev = from[set * n + last];
      set &= ~(size_t{1} << last);
      last = static_cast<size_t>(prev);
    }
    order.push_back(mine[0]);
    std::reverse(order.begin(), order.end());
    return order;
  }
  std::vector<int> order{mine[0]};
  std::vector<bool> used(n, false);
  used[0] = true;
  for (size_t k = 1, cur = 0; k < n; k++) {
    size_t pick = 0;
    double c = std::numeric_limits<double>::infinity();
    for (size_t j = 0; j < n; j++)
      if (!used[j] && cost(cur, j) < c) c = cost(cur, j), pick = j;
    used[pick] = true;
    order.push_back(mine[pick]);
    cur = pick;
  }
  return order;
}

std::map<int, std::vector<int>> by_host(const std::vector<RankPlace>& ranks) {
  std::map<int, std::vector<int>> h;
  for (size_t r = 0; r < ranks.size(); r++) h[ranks[r].host].push_back(static_cast<int>(r));
  return h;
}

}  // namespace

HostPlan plan_host(const Topology& t, const std::vector<RankPlace>& ranks, bool alone) {
  std::vector<int> all(ranks.size());
  for (size_t i = 0; i < all.size(); i++) all[i] = static_cast<int>(i);
  return {order_host(t, ranks, all, alone), assign_nics(t, ranks)};
}

std::vector<int> ring_order(const Topology& t, const std::vector<RankPlace>& ranks) {
  std::vector<int> ring;
  auto hosts = by_host(ranks);
  for (auto& [host, mine] : hosts) {
    std::vector<int> part = order_host(t, ranks, mine, hosts.size() == 1);
    ring.insert(ring.end(), part.begin(), part.end());
  }
  return ring;
}

std::vector<int> assign_nics(const Topology& t, const std::vector<RankPlace>& ranks) {
  std::vector<int> out(ranks.size(), -1);
  std::map<int, std::vector<int>> endpoints;  // host -> its NIC endpoints
  for (int p : t.nic_endpoints()) endpoints[t.host_of(p)].push_back(p);
  // Load counts per NIC, not per port: the two ports of one NIC share its PCIe link, so a second
  // rank is better served by another NIC that is as close.
  std::map<int, int> nic_load, port_load;
  for (size_t r = 0; r < ranks.size(); r++) {
    double best = std::numeric_limits<double>::infinity();
    for (int p : endpoints[ranks[r].host]) {
      PathInfo pi = t.path(ranks[r].device, p);
      // A usable port first (not down, not a virtual device), then closeness, then the least
      // loaded NIC, then the fewest hops, then the least loaded port, then the faster one.
      const Device& port = t.devices[p];
      const int nic = port.kind == Kind::Port ? port.parent : p;
      std::string state = port.attr("state");
      bool usable = state.empty() || state == "up" || state == "unknown" || state.find("ACTIVE") != std::string::npos;
      usable = usable && port.attr("virtual").empty() && t.devices[nic].attr("virtual").empty();
      double c = (usable ? 0 : 1e15) + static_cast<double>(pi.type) * 1e12 + nic_load[nic] * 1e9 +
                 std::min(t.hops(ranks[r].device, p), 999) * 1e6 + port_load[p] * 1e3 +
                 1.0 / std::max(t.up_bw(p), 1e-3);
      if (c < best) best = c, out[r] = p;
    }
    if (out[r] >= 0) {
      const Device& port = t.devices[out[r]];
      nic_load[port.kind == Kind::Port ? port.parent : out[r]]++;
      port_load[out[r]]++;
    }
  }
  return out;
}

HostTree host_tree(const Topology& t, const std::vector<RankPlace>& ranks) {
  HostTree tree;
  tree.parent.assign(ranks.size(), -1);
  std::vector<int> nic = assign_nics(t, ranks);
  for (auto& [host, mine] : by_host(ranks)) {
    int lead = mine[0];
    double best = std::numeric_limits<double>::infinity();
    for (int r : mine) {
      if (nic[r] < 0) continue;
      PathInfo p = t.path(ranks[r].device, nic[r]);
      double c = static_cast<double>(p.type) * 1e6 + 1.0 / std::max(p.bw, 1e-3);
      if (c < best) best = c, lead = r;
    }
    tree.leaders.push_back(lead);
  }
  for (size_t i = 1; i < tree.leaders.size(); i++) tree.parent[tree.leaders[i]] = tree.leaders[(i - 1) / 2];
  return tree;
}

LinkClass link_class(const Topology& t, const RankPlace& a, const RankPlace& b) {
  if (a.host != b.host) {
    std::vector<int> na = assign_nics(t, {a}), nb = assign_nics(t, {b});
    double bw = 0;
    if (na[0] >= 0 && nb[0] >= 0) bw = std::min(t.up_bw(na[0]), t.up_bw(nb[0]));
    return {Path::NET, bw};
  }
  PathInfo p = t.path(a.device, b.device);
  return {p.type, p.bw};
}

std::vector<RankPlace> default_places(const Topology& t, int ranks_per_host) {
  std::vector<RankPlace> out;
  for (int h : t.of_kind(Kind::Host)) {
    std::vector<int> devs;
    for (int g : t.of_kind(Kind::Gpu))
      if (t.host_of(g) == h) devs.push_back(g);
    if (devs.empty())
      for (int c : t.of_kind(Kind::Cpu))
        if (t.host_of(c) == h) devs.push_back(c);
    if (devs.empty()) devs.push_back(h);
    for (int r = 0; r < ranks_per_host; r++) out.push_back({h, devs[static_cast<size_t>(r) % devs.size()]});
  }
  return out;
}

}  // namespace coral::topology
