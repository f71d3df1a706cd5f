#include "collectives/simulate.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <queue>
#include <unordered_map>

#include "kernels/reduce.h"

namespace coral::collectives {

Cluster Cluster::uniform(int nranks, int ranks_per_host, LinkCost intra, LinkCost inter, double gamma) {
  Cluster c{{}, intra, inter, gamma};
  for (int r = 0; r < nranks; r++) c.host.push_back(r / std::max(1, ranks_per_host));
  return c;
}

double bus_factor(Coll c, int p) {
  if (p <= 1) return 1;
  if (c == Coll::AllReduce) return 2.0 * (p - 1) / p;
  switch (c) {
    case Coll::ReduceScatter:
    case Coll::AllGather:
    case Coll::ReduceScatterv:
    case Coll::AllGatherv:
    case Coll::AllToAll:
    case Coll::AllToAllv:
    case Coll::Gather:
    case Coll::Scatter:
      return static_cast<double>(p - 1) / p;
    default:
      break;
  }
  return 1;
}

namespace {

struct Port {
  double out[2] = {0, 0}, in[2] = {0, 0};  // free from, per link class (0 intra, 1 inter)
};

struct Machine {
  const std::vector<Schedule>& s;
  size_t es;
  const Cluster& c;
  std::vector<double> clock;
  std::vector<size_t> pc;
  std::vector<Port> port;
  std::unordered_map<uint64_t, std::deque<double>> chan;  // arrival times, from * P + to
  int p;

  uint64_t key(int from, int to) const { return static_cast<uint64_t>(from) * p + to; }

  void send(int r, int to, size_t n) {
    int cls = c.host[r] == c.host[to] ? 0 : 1;
    const LinkCost& l = cls ? c.inter : c.intra;
    double wire = static_cast<double>(n * es) * l.beta;
    double start = std::max(clock[r], port[r].out[cls]);
    port[r].out[cls] = start + l.overhead + wire;
    start += l.overhead;
    double arrive = start + l.alpha + wire;
    // The receiver takes one message at a time per link class too.
    arrive = std::max(arrive, port[to].in[cls] + wire);
    port[to].in[cls] = arrive;
    chan[key(r, to)].push_back(arrive);
  }

  // When rank r's next step can start, or -1 if it waits for a message (or is done).
  double ready(int r) const {
    const Schedule& sc = s[r];
    if (pc[r] >= sc.steps.size()) return -1;
    const Step& st = sc.steps[pc[r]];
    bool in = st.kind == OpKind::Recv || st.kind == OpKind::RecvReduce || st.kind == OpKind::RecvReduceSend ||
              st.kind == OpKind::RecvCopySend;
    if (!in) return clock[r];
    auto it = chan.find(key(st.peer, r));
    if (it == chan.end() || it->second.empty()) return -1;
    return std::max(clock[r], it->second.front());
  }

  // Runs rank r's next step (ready(r) >= 0); returns the rank a message went to, or -1.
  int step(int r) {
    const Step& st = s[r].steps[pc[r]];
    double start = ready(r);
    bool in = st.kind == OpKind::Recv || st.kind == OpKind::RecvReduce || st.kind == OpKind::RecvReduceSend ||
              st.kind == OpKind::RecvCopySend;
    if (in) chan[key(st.peer, r)].pop_front();
    clock[r] = start + (st.kind == OpKind::Send ? 0 : static_cast<double>(st.count * es) * c.gamma);
    int to = st.kind == OpKind::Send                                                  ? st.peer
             : (st.kind == OpKind::RecvReduceSend || st.kind == OpKind::RecvCopySend) ? st.peer_out
                                                                                      : -1;
    if (to >= 0) send(r, to, st.count);
    pc[r]++;
    return to;
  }
};

}  // namespace

SimResult simulate(const std::vector<Schedule>& per_rank, size_t elem_bytes, const Cluster& c) {
  const int p = static_cast<int>(per_rank.size());
  if (static_cast<int>(c.host.size()) != p) return {0, "cluster describes a different number of ranks"};
  Machine m{per_rank, elem_bytes, c, std::vector<double>(p, 0), std::vector<size_t>(p, 0), std::vector<Port>(p), {}, p};
  // Steps run in the order of their start times, so that ports see traffic in time order.
  using Ev = std::pair<double, int>;
  std::priority_queue<Ev, std::vector<Ev>, std::greater<Ev>> q;
  auto push = [&](int r) {
    if (double t = m.ready(r); t >= 0) q.push({t, r});
  };
  for (int r = 0; r < p; r++) push(r);
  while (!q.empty()) {
    auto [t, r] = q.top();
    q.pop();
    if (m.ready(r) != t) continue;  // stale: r moved on since
    int to = m.step(r);
    push(r);
    if (to >= 0 && to != r) push(to);
  }
  for (int r = 0; r < p; r++)
    if (m.pc[r] < per_rank[r].steps.size()) return {0, fmt::format("deadlock at rank {} step {}", r, m.pc[r])};
  return {*std::max_element(m.clock.begin(), m.clock.end()), ""};
}

SimResult simulate(const CollArgs& args, Algo algo, const Cluster& c) {
  return simulate_ranks([&](int) { return args; }, algo, c);
}

SimResult simulate_ranks(const std::function<CollArgs(int rank)>& args_of, Algo algo, const Cluster& c) {
  const CollArgs first = args_of(0);
  std::vector<Schedule> all;
  all.reserve(static_cast<size_t>(first.nranks));
  for (int r = 0; r < first.nranks; r++) {
    CollArgs a = r == 0 ? first : args_of(r);
    a.rank = r;
    all.push_back(build(a, algo));
  }
  return simulate(all, kernels::dtype_size(first.dtype), c);
}

}  // namespace coral::collectives
