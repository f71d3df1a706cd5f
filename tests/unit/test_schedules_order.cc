// Topology hands the builders a ring order (CollArgs::order, position -> rank). The checker
// proves every builder under permuted orders, and the ring builders are shown to follow them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "collectives/registry.h"
#include "collectives/verify.h"

using namespace coral::collectives;

namespace {

struct Builder {
  Coll coll;
  Algo algo;
};

// Every builder the registry has, but send/recv (no ring) and all-to-all-v (per-rank counts,
// proven in test_schedules_v).
std::vector<Builder> builders() {
  std::vector<Builder> out;
  for (int c = 0; c <= static_cast<int>(Coll::ReduceScatterv); ++c)
    for (int a = static_cast<int>(Algo::Ring); a <= static_cast<int>(Algo::Bruck); ++a) {
      const Builder b{static_cast<Coll>(c), static_cast<Algo>(a)};
      if (b.coll != Coll::Send && b.coll != Coll::Recv && b.coll != Coll::AllToAllv && supports(b.coll, b.algo))
        out.push_back(b);
    }
  return out;
}

std::vector<int> shuffled(int p, unsigned seed) {
  std::vector<int> order(static_cast<size_t>(p));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

// Uneven counts with a zero, for the v-collectives.
std::shared_ptr<VCounts> v_counts(Coll coll, int p, size_t base) {
  auto v = std::make_shared<VCounts>();
  size_t at = 0;
  for (int r = 0; r < p; ++r) {
    const size_t n = r == 1 ? 0 : base + static_cast<size_t>(r);
    v->recv_counts.push_back(n);
    if (coll == Coll::AllGatherv) v->recv_displs.push_back(at);
    at += n;
  }
  return v;
}

std::string check(Builder b, int p, size_t count, const std::vector<int>* order, const std::vector<int>* hosts,
                  bool in_place) {
  CollArgs base;
  base.coll = b.coll;
  base.count = count;
  base.nranks = p;
  base.chunk = 7;  // several rounds a block
  base.root = p / 2;
  base.op = count % 2 ? coralAvg : coralSum;
  base.order = order;
  base.hosts = hosts;
  VerifyResult r;
  if (b.coll == Coll::AllGatherv || b.coll == Coll::ReduceScatterv) {
    base.v = v_counts(b.coll, p, count);
    r = verify_ranks(
        [&](int rank) {
          CollArgs a = base;
          a.rank = rank;
          a.count = a.v->recv_counts[static_cast<size_t>(rank)];
          a.in_place = in_place;
          return a;
        },
        b.algo);
  } else {
    r = verify(base, b.algo, in_place);
  }
  if (r.ok && r.error.empty()) return "";
  return std::string(coll_name(b.coll)) + " " + algo_name(b.algo) + " P=" + std::to_string(p) +
         " count=" + std::to_string(count) + " in_place=" + std::to_string(in_place) + ": " + r.error;
}

}  // namespace

TEST_CASE("every builder holds under a permuted ring order") {
  const std::vector<Builder> all = builders();
  REQUIRE(all.size() >= 24);
  for (int p : {2, 3, 4, 5, 8, 13})
    for (unsigned seed = 1; seed <= 3; ++seed) {
      const std::vector<int> order = shuffled(p, seed * 31 + static_cast<unsigned>(p));
      for (const Builder& b : all)
        for (size_t count : {size_t(0), size_t(1), static_cast<size_t>(p + 1), size_t(101)})
          for (bool in_place : {false, true}) {
            if (b.coll == Coll::Barrier && count) continue;
            INFO("order seed " << seed);
            REQUIRE(check(b, p, count, &order, nullptr, in_place) == "");
          }
    }
}

TEST_CASE("hier holds when each host's members take the topology's order") {
  // Two hosts of four, their ranks interleaved, and each host's ring reversed.
  const std::vector<int> hosts = {0, 1, 0, 1, 0, 1, 0, 1};
  const std::vector<int> order = {6, 4, 2, 0, 7, 5, 3, 1};
  for (size_t count : {size_t(0), size_t(1), size_t(9), size_t(101), size_t(1000)})
    for (bool in_place : {false, true})
      REQUIRE(check({Coll::AllReduce, Algo::Hier}, 8, count, &order, &hosts, in_place) == "");
}

TEST_CASE("ring builders send to the next rank of the order and hear from the previous") {
  const int p = 6;
  const std::vector<int> order = {0, 3, 5, 1, 4, 2};
  for (Coll coll : {Coll::AllReduce, Coll::ReduceScatter, Coll::AllGather}) {
    for (int rank = 0; rank < p; ++rank) {
      CollArgs a;
      a.coll = coll;
      a.count = 60;
      a.nranks = p;
      a.rank = rank;
      a.chunk = 1 << 20;
      a.order = &order;
      const Schedule s = build(a, Algo::Ring);
      const int pos = static_cast<int>(std::find(order.begin(), order.end(), rank) - order.begin());
      const int next = order[static_cast<size_t>((pos + 1) % p)], prev = order[static_cast<size_t>((pos + p - 1) % p)];
      REQUIRE_FALSE(s.steps.empty());
      for (const Step& st : s.steps) {
        INFO(coll_name(coll) << " rank " << rank << " step kind " << static_cast<int>(st.kind));
        if (st.kind == OpKind::Send) {
          CHECK(st.peer == next);
        } else if (st.kind != OpKind::Copy && st.kind != OpKind::Reduce && st.kind != OpKind::Scale) {
          CHECK(st.peer == prev);
          if (st.peer_out >= 0) CHECK(st.peer_out == next);
        }
      }
    }
  }
}
