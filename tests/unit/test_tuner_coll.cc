// The tuner for all-to-all, gather, scatter and the v-forms: CORAL_ALGO names them, the picks
// follow select.cc's bounds, and the simulator agrees with those bounds.
#include <catch2/catch.hpp>

#include <memory>

#include "collectives/registry.h"
#include "collectives/simulate.h"
#include "collectives/tuner/select.h"

using namespace coral::collectives;

namespace {

// A call on `p` ranks with `bytes` of floats per block (per peer, per rank, or this rank's).
CollArgs args(Coll coll, int p, size_t bytes) {
  CollArgs a;
  a.coll = coll;
  a.nranks = p;
  a.count = bytes / 4;
  a.dtype = coralFloat32;
  return a;
}

}  // namespace

TEST_CASE("all-to-all, gather, scatter and the v-forms: CORAL_ALGO names them, the tuner picks for them") {
  const std::string text =
      "alltoall:0-16K:bruck,16K-:pairwise;alltoallv:0-:pairwise;gather:0-64K:tree;scatter:0-:direct;"
      "allgatherv:0-:ring;reducescatterv:0-:ring";
  const Overrides o = parse_overrides(text);
  CHECK(o.rules.size() == 7);
  CHECK(format_rules(o.rules) == text);
  TuneParams t;
  t.rules = o.rules;
  CHECK(select_algo(args(Coll::AllToAll, 4, 1 << 10), t) == Algo::Bruck);   // 4 KiB in all
  CHECK(select_algo(args(Coll::Gather, 64, 64 << 10), t) == Algo::Direct);  // outside: the tuner's
  t.rules.clear();
  // All-to-all (count per peer): Bruck for blocks up to 256 bytes from 8 ranks; all-to-all-v
  // has one algorithm.
  CHECK(select_algo(args(Coll::AllToAll, 64, 256), t) == Algo::Bruck);
  CHECK(select_algo(args(Coll::AllToAll, 64, 260), t) == Algo::Pairwise);
  CHECK(select_algo(args(Coll::AllToAll, 4, 16), t) == Algo::Pairwise);
  CHECK(select_algo(args(Coll::AllToAllv, 64, 64), t) == Algo::Pairwise);
  // Gather and scatter (count per rank): the trees for blocks up to 4 KiB from 8 ranks.
  CHECK(select_algo(args(Coll::Gather, 16, kTreeBlockBytes), t) == Algo::Tree);
  CHECK(select_algo(args(Coll::Scatter, 16, kTreeBlockBytes), t) == Algo::Tree);
  CHECK(select_algo(args(Coll::Scatter, 16, kTreeBlockBytes + 4), t) == Algo::Direct);
  CHECK(select_algo(args(Coll::Gather, 4, 64), t) == Algo::Direct);
  CHECK(select_algo(args(Coll::AllGatherv, 16, 1 << 20), t) == Algo::Ring);
  CHECK(select_algo(args(Coll::ReduceScatterv, 16, 1 << 20), t) == Algo::Ring);
  t.single_host = true;  // the one-host rows name only the all-reduce
  CHECK(select_algo(args(Coll::AllToAll, 64, 256), t) == Algo::Bruck);
  // A forced name applies where the collective has it.
  t.forced = Algo::Tree;
  CHECK(select_algo(args(Coll::Gather, 16, 64 << 20), t) == Algo::Tree);
  CHECK(select_algo(args(Coll::AllToAll, 16, 64 << 20), t) == Algo::Pairwise);
  t.forced = Algo::Auto;
  // Sizes as nccl-tests counts them: the whole buffer, the root's for gather and scatter.
  CHECK(message_bytes(args(Coll::AllToAll, 8, 400)) == 8 * 400);
  CHECK(message_bytes(args(Coll::Scatter, 8, 400)) == 8 * 400);
  CollArgs agv = args(Coll::AllGatherv, 3, 8);
  agv.v = std::make_shared<VCounts>(VCounts{{}, {}, {5, 0, 7}, {0, 5, 5}});
  CHECK(message_bytes(agv) == 12 * 4);
  for (Coll c : {Coll::AllToAll, Coll::Gather, Coll::Scatter})
    for (Algo a : {Algo::Pairwise, Algo::Bruck, Algo::Direct, Algo::Tree})
      if (supports(c, a)) CHECK(select_chunk(args(c, 16, 1 << 20), a, t, 1 << 20) == (1u << 20));
  CHECK(bus_factor(Coll::AllToAll, 4) == Approx(0.75));
  CHECK(bus_factor(Coll::Gather, 4) == Approx(0.75));
}

TEST_CASE("the simulator agrees: Bruck wins small all-to-all blocks, pairwise large; trees small scatters") {
  // (It charges a message to its sender only, so a gather's tree shows no gain in it: the root
  // receives what a scatter's sends, and the tuner treats them alike.)
  TuneParams t;
  // Each message costs its sender alpha as well (as in the chunk test above), and local copies
  // cost as much per byte as the link: Bruck's packing is not free.
  const LinkCost l{t.intra.alpha, t.intra.beta, t.intra.alpha};
  auto time = [&](Coll coll, Algo algo, int p, size_t block) {
    CollArgs x = args(coll, p, block);  // block bytes per peer
    x.chunk = 1 << 20;
    SimResult r = simulate(x, algo, Cluster::uniform(p, p, l, l, t.intra.beta));
    REQUIRE(r.error == "");
    return r.seconds;
  };
  for (int p : {kBruckMinRanks, 16, 64, 128}) {
    INFO("P=" << p);
    CHECK(time(Coll::AllToAll, Algo::Bruck, p, kBruckBlockBytes) <
          time(Coll::AllToAll, Algo::Pairwise, p, kBruckBlockBytes));
    CHECK(time(Coll::AllToAll, Algo::Pairwise, p, 64 << 10) < time(Coll::AllToAll, Algo::Bruck, p, 64 << 10));
    // A message costs the root's port alpha: P-1 of them against log2 P, up to 4 KiB blocks;
    // past 16 KiB the tree's extra hops cost more where P is small.
    CHECK(time(Coll::Scatter, Algo::Tree, p, kTreeBlockBytes) < time(Coll::Scatter, Algo::Direct, p, kTreeBlockBytes));
    if (p <= 16) CHECK(time(Coll::Scatter, Algo::Direct, p, 64 << 10) < time(Coll::Scatter, Algo::Tree, p, 64 << 10));
  }
  // All-to-all-v from each rank's own counts.
  SimResult r = simulate_ranks(
      [](int rank) {
        CollArgs x;
        x.coll = Coll::AllToAllv;
        x.nranks = 3;
        auto v = std::make_shared<VCounts>();
        for (int j = 0; j < 3; ++j) {
          v->send_counts.push_back(static_cast<size_t>(10 * rank + j));
          v->recv_counts.push_back(static_cast<size_t>(10 * j + rank));
        }
        v->send_displs = {0, v->send_counts[0], v->send_counts[0] + v->send_counts[1]};
        v->recv_displs = {0, v->recv_counts[0], v->recv_counts[0] + v->recv_counts[1]};
        x.count = v->recv_counts[0] + v->recv_counts[1] + v->recv_counts[2];
        x.v = std::move(v);
        return x;
      },
      Algo::Pairwise, Cluster::uniform(3, 3, l, l));
  CHECK(r.error == "");
  CHECK(r.seconds > 0);
}
