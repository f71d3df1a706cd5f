// The tuner: algorithm names and CORAL_ALGO parsing, the simulator against closed forms, and the
// picks (algorithm and chunk) against the simulator and against measured crossovers.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "collectives/registry.h"
#include "collectives/simulate.h"
#include "collectives/tuner/select.h"
#include "collectives/tuner/trials.h"

using namespace coral::collectives;

namespace {

// A call on `p` ranks of `bytes` of floats.
CollArgs args(Coll coll, int p, size_t bytes) {
  CollArgs a;
  a.coll = coll;
  a.nranks = p;
  a.count = bytes / 4;
  a.dtype = coralFloat32;
  return a;
}

}  // namespace

TEST_CASE("algorithm names parse and unknown ones are rejected") {
  CHECK(parse_algo("ring") == Algo::Ring);
  CHECK(parse_algo("rd") == Algo::RecursiveDoubling);
  CHECK(parse_algo("auto") == Algo::Auto);
  CHECK(parse_algo("rhd") == Algo::Rhd);
  CHECK(parse_algo("tree") == Algo::Tree);
  CHECK_THROWS_WITH(parse_algo("bogus"), Catch::Contains("bogus"));
}

TEST_CASE("CORAL_ALGO: one name, or size ranges per collective, with clear errors") {
  Overrides o = parse_overrides("rhd");
  CHECK(o.all == Algo::Rhd);
  CHECK(o.rules.empty());
  o = parse_overrides("allreduce:0-4K:oneshot,4K-1M:rhd,1M-:ring;broadcast:0-64k:tree");
  REQUIRE(o.rules.size() == 4);
  TuneParams t;
  t.rules = o.rules;
  t.single_host = true;
  auto pick = [&](Coll c, size_t count, int p = 4) { return select_algo(args(c, p, count * 4), t); };
  CHECK(pick(Coll::AllReduce, 2) == Algo::OneShot);     // 8 B
  CHECK(pick(Coll::AllReduce, 1023) == Algo::OneShot);  // 4092 B
  CHECK(pick(Coll::AllReduce, 1024) == Algo::Rhd);      // 4 KiB
  CHECK(pick(Coll::AllReduce, (1 << 18) - 1) == Algo::Rhd);
  CHECK(pick(Coll::AllReduce, 1 << 18) == Algo::Ring);  // 1 MiB
  CHECK(pick(Coll::Broadcast, 100) == Algo::Tree);
  CHECK(pick(Coll::Broadcast, 1 << 20) == default_algo(Coll::Broadcast));  // outside: the tuner's
  CHECK(parse_overrides("auto").all == Algo::Auto);
  CHECK(parse_overrides("reducescatter:0-:rhd").rules[0].hi == SIZE_MAX);
  auto error = [](const std::string& s) {
    try {
      parse_overrides(s);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(error("warp"), Catch::Contains("unknown algorithm 'warp'"));
  CHECK_THAT(error("allreduce:0-4K:oneshot,2K-8K:ring"), Catch::Contains("overlaps"));
  CHECK_THAT(error("allreduce:4K-1K:ring"), Catch::Contains("empty range"));
  CHECK_THAT(error("allreduce:0-4Q:ring"), Catch::Contains("'4Q' is not a size"));
  CHECK_THAT(error("allreduce:0-4K"), Catch::Contains("lo-hi:algorithm"));
  CHECK_THAT(error("allgather:0-:tree"), Catch::Contains("allgather has no algorithm 'tree'"));
  CHECK_THAT(error("barrier:0-:ring"), Catch::Contains("unknown collective 'barrier'"));
  CHECK_THAT(error("barrier:0-:ring"), Catch::Contains("alltoall, alltoallv, gather, scatter"));
  CHECK_THAT(error("alltoall:0-:ring"), Catch::Contains("alltoall has no algorithm 'ring'"));
  CHECK_THAT(error("allreduce:0-:auto"), Catch::Contains("no algorithm 'auto'"));
}

TEST_CASE("simulator matches the closed forms of ring, recursive doubling, rhd and the chain") {
  const LinkCost l{2e-6, 1e-9};  // 2 us, 1 GB/s
  const double a = l.alpha, b = l.beta;
  auto time = [&](Coll coll, Algo algo, int p, size_t count, size_t chunk = size_t(1) << 40) {
    CollArgs x = args(coll, p, count * 4);
    x.chunk = chunk;
    SimResult r = simulate(x, algo, Cluster::uniform(p, p, l, l));
    REQUIRE(r.error == "");
    return r.seconds;
  };
  for (int p : {2, 4, 8, 16}) {
    INFO("P=" << p);
    const size_t count = 4096 * p;
    const double s = 4.0 * count;
    CHECK(time(Coll::AllReduce, Algo::Ring, p, count) == Approx(2 * (p - 1) * (a + s / p * b)));
    int lg = 0;
    while ((1 << lg) < p) lg++;
    CHECK(time(Coll::AllReduce, Algo::RecursiveDoubling, p, count) == Approx(lg * (a + s * b)));
    CHECK(time(Coll::AllReduce, Algo::Rhd, p, count) == Approx(2 * lg * a + 2 * s * (p - 1) / p * b));
    const size_t chunks = 8, chunk = count / chunks;
    // Pipelined: latency once per hop, then the sender's port paces the remaining chunks.
    CHECK(time(Coll::Broadcast, Algo::Chain, p, count, chunk) ==
          Approx((p - 1) * (a + 4.0 * chunk * b) + (chunks - 1) * 4.0 * chunk * b));
  }
  // Two hosts joined by a link 8x slower than inside them: the network's share dominates.
  LinkCost slow{10e-6, 8e-9};
  CollArgs x = args(Coll::AllReduce, 8, 4 << 20);
  x.chunk = size_t(1) << 40;
  SimResult two = simulate(x, Algo::Ring, Cluster::uniform(8, 4, l, slow));
  SimResult one = simulate(x, Algo::Ring, Cluster::uniform(8, 8, l, l));
  CHECK(two.seconds > 7 * one.seconds);
  CHECK(bus_factor(Coll::AllReduce, 4) == Approx(1.5));
  CHECK(bus_factor(Coll::Broadcast, 4) == Approx(1));
}

TEST_CASE("on one host the tuner takes one-shot, then rhd or two-shot, then (above 4 ranks) the ring") {
  TuneParams t;
  t.single_host = true;
  auto pick = [&](int p, size_t bytes) { return select_algo(args(Coll::AllReduce, p, bytes), t); };
  CHECK(pick(4, 8) == Algo::OneShot);
  CHECK(pick(8, 4096) == Algo::OneShot);
  CHECK(pick(16, 4096) == Algo::RecursiveDoubling);  // too many peers for one-shot
  // Past 4 KiB one-shot goes on while its peers read S(P-1) <= 64 KiB of it.
  CHECK(pick(4, 16 << 10) == Algo::OneShot);
  CHECK(pick(4, (16 << 10) + 4) == Algo::OneShot);
  CHECK(pick(4, 32 << 10) == Algo::TwoShot);
  CHECK(pick(8, 8 << 10) == Algo::OneShot);
  CHECK(pick(8, 16 << 10) == Algo::Rhd);  // past one-shot, rhd below 128 KiB for P > 4
  CHECK(pick(6, 16 << 10) == Algo::TwoShot);
  CHECK(pick(2, 64 << 10) == Algo::OneShot);
  CHECK(pick(2, (64 << 10) + 4) == Algo::TwoShot);
  t.single_host = false;
  CHECK(pick(4, 8 << 10) != Algo::OneShot);  // across hosts the peers' reads are network sends
  t.single_host = true;
  CHECK(pick(4, 128 << 10) == Algo::TwoShot);
  CHECK(pick(4, 256 << 10) == Algo::Rhd);
  CHECK(pick(4, 16 << 20) == Algo::Rhd);  // at P=4 up to 32 MiB
  CHECK(pick(4, 32 << 20) == Algo::TwoShot);
  CHECK(pick(3, 1 << 20) == Algo::TwoShot);  // not a power of two
  // Above 4 ranks the ring takes over from S = max(128 KiB, 256 P^3).
  CHECK(pick(8, (128 << 10) - 4) == Algo::Rhd);
  CHECK(pick(8, 128 << 10) == Algo::Ring);
  CHECK(pick(8, 64 << 20) == Algo::Ring);
  CHECK(pick(6, 64 << 10) == Algo::TwoShot);
  CHECK(pick(6, 128 << 10) == Algo::Ring);
  CHECK(pick(16, 64 << 10) == Algo::Rhd);
  CHECK(pick(16, 512 << 10) == Algo::TwoShot);
  CHECK(pick(16, 1 << 20) == Algo::Ring);
}

TEST_CASE("the tuner's chunk for pipelines beats the smallest and the largest in the simulator") {
  TuneParams t;
  t.single_host = true;
  t.intra = {5e-6, 1 / 10e9};  // 5 us, 10 GB/s
  // The tuner counts alpha as a cost each message also makes its sender pay (software transports
  // spend it in the CPU): the simulator's per-message overhead.
  const LinkCost l{t.intra.alpha, t.intra.beta, t.intra.alpha};
  const size_t max = 4 << 20;
  // Without a pipeline the largest message is the chunk.
  CHECK(select_chunk(args(Coll::AllReduce, 8, 64 << 20), Algo::Ring, t, max) == max);
  CHECK(select_chunk(args(Coll::AllReduce, 8, 64 << 20), Algo::Rhd, t, max) == max);
  CHECK(select_chunk(args(Coll::Broadcast, 2, 64 << 20), Algo::Chain, t, max) == max);  // one hop
  // sqrt(S alpha / ((d - 1) beta)) = sqrt(1 MiB * 5e-6 * 10e9 / 6) ~ 93 KiB: 64 KiB.
  CHECK(select_chunk(args(Coll::Broadcast, 8, 1 << 20), Algo::Chain, t, max) == (64 << 10));
  struct Case {
    Coll coll;
    Algo algo;
    int p;
    size_t bytes;
  };
  for (Case c : {Case{Coll::Broadcast, Algo::Chain, 16, 4 << 20}, Case{Coll::Reduce, Algo::Chain, 8, 16 << 20},
                 Case{Coll::Broadcast, Algo::Chain, 64, 64 << 20}, Case{Coll::Reduce, Algo::Chain, 5, 2 << 20},
                 Case{Coll::Broadcast, Algo::Tree, 32, 8 << 20}, Case{Coll::AllReduce, Algo::Tree, 16, 16 << 20}}) {
    CollArgs x = args(c.coll, c.p, c.bytes);
    const size_t pick = select_chunk(x, c.algo, t, max);
    if (c.algo == Algo::Tree) {
      // Trees keep the largest chunk: in the simulator smaller ones only add round trips.
      CHECK(pick == max);
      auto time = [&](size_t chunk_bytes) {
        x.chunk = chunk_bytes / 4;
        return simulate(x, c.algo, Cluster::uniform(c.p, c.p, l, l)).seconds;
      };
      CHECK(time(max) < time(256 << 10));
      continue;
    }
    auto time = [&](size_t chunk_bytes) {
      x.chunk = chunk_bytes / 4;
      SimResult r = simulate(x, c.algo, Cluster::uniform(c.p, c.p, l, l));
      REQUIRE(r.error == "");
      return r.seconds;
    };
    INFO(coll_name(c.coll) << " " << algo_name(c.algo) << " P=" << c.p << " bytes=" << c.bytes << " chunk=" << pick);
    CHECK(pick > kMinChunk);
    CHECK(pick < max);
    CHECK(time(pick) < time(kMinChunk));
    CHECK(time(pick) < time(max));
  }
}

TEST_CASE("across hosts the tuner's cost-model pick is close to the simulator's best") {
  TuneParams t;
  const LinkCost intra{t.intra.alpha, t.intra.beta}, inter{t.inter.alpha, t.inter.beta};
  for (auto [p, per_host] : {std::pair{16, 4}, {32, 8}, {64, 8}, {128, 8}, {24, 8}}) {
    Cluster c = Cluster::uniform(p, per_host, intra, inter);
    t.hosts = (p + per_host - 1) / per_host;
    for (size_t bytes : {size_t(8) << 10, size_t(64) << 10, size_t(1) << 20, size_t(8) << 20, size_t(64) << 20}) {
      CollArgs a = args(Coll::AllReduce, p, bytes);
      a.chunk = size_t(1) << 40;
      a.hosts = &c.host;
      std::map<Algo, double> sim;
      for (Algo algo : {Algo::RecursiveDoubling, Algo::Rhd, Algo::Ring, Algo::Hier}) {
        SimResult r = simulate(a, algo, c);
        REQUIRE(r.error == "");
        sim[algo] = r.seconds;
      }
      double best =
          std::min_element(sim.begin(), sim.end(), [](auto& x, auto& y) { return x.second < y.second; })->second;
      Algo pick = select_algo(a, t);
      INFO("P=" << p << " per host " << per_host << " bytes " << bytes << ": picked " << algo_name(pick) << " "
                << sim[pick] * 1e6 << " us, best " << best * 1e6 << " us");
      CHECK(sim[pick] <= 1.25 * best);
    }
  }
}

TEST_CASE("a NIC shared by a host's ranks slows the algorithms where they all cross at once, not the ring") {
  // 2 hosts x 2 ranks on a 1 Gb/s network (what the startup probe measures on the emulated hosts).
  ClusterModel one{4, 2, {1e-6, 1 / 20e9}, {20e-6, 1 / 0.12e9}, 1};
  ClusterModel shared = one;
  shared.nic_share = 2;
  const double s = 64 * 1024;
  CHECK(cost_rd(shared, s) > 1.5 * cost_rd(one, s));
  CHECK(cost_rhd(shared, s) > 1.5 * cost_rhd(one, s));
  CHECK(cost_hier(shared, s) > cost_hier(one, s));
  CHECK(cost_ring(shared, s) == cost_ring(one, s));
  // Measured there (coral-bench, 64 KiB): hier 317 us, ring 497 us, rd 734 us. The model with the
  // shared NIC orders them the same way.
  CHECK(cost_hier(shared, s) < cost_ring(shared, s));
  CHECK(cost_ring(shared, s) < cost_rd(shared, s));
}

TEST_CASE("trials time only close rivals, the model's pick first, and never against an override") {
  TuneParams t;
  t.single_host = true;
  CHECK(trial_candidates(args(Coll::AllReduce, 8, 64 << 10), t).empty());  // off by default
  t.trials = true;
  std::vector<Algo> c = trial_candidates(args(Coll::AllReduce, 8, 64 << 10), t);
  REQUIRE(c.size() >= 2);
  CHECK(c.size() <= 4);
  CHECK(c.front() == select_algo(args(Coll::AllReduce, 8, 64 << 10), t));
  CHECK(std::count(c.begin(), c.end(), Algo::TwoShot) == 1);
  CHECK(std::count(c.begin(), c.end(), Algo::Rhd) == 1);
  // rhd folds a whole extra vector when P is not a power of two: not a rival at P=6.
  c = trial_candidates(args(Coll::AllReduce, 6, 1 << 20), t);
  CHECK(std::count(c.begin(), c.end(), Algo::Rhd) == 0);
  CHECK(std::count(c.begin(), c.end(), Algo::Ring) == 1);
  CHECK(trial_candidates(args(Coll::AllReduce, 8, 8), t).empty());        // latency-bound
  CHECK(trial_candidates(args(Coll::AllReduce, 2, 1 << 20), t).empty());  // nothing to choose
  CHECK(trial_candidates(args(Coll::Broadcast, 8, 1 << 20), t).empty());
  TuneParams forced = t;
  forced.forced = Algo::Ring;
  CHECK(trial_candidates(args(Coll::AllReduce, 8, 1 << 20), forced).empty());
  TuneParams ruled = t;
  ruled.rules = parse_overrides("allreduce:1M-2M:rhd").rules;
  CHECK(trial_candidates(args(Coll::AllReduce, 8, 1 << 20), ruled).empty());
  CHECK_FALSE(trial_candidates(args(Coll::AllReduce, 8, 2 << 20), ruled).empty());
  // Across hosts the cost model names the rivals; the hierarchical one is among them for large calls.
  TuneParams hosts = t;
  hosts.single_host = false;
  hosts.hosts = 2;
  c = trial_candidates(args(Coll::AllReduce, 4, 64 << 20), hosts);
  REQUIRE(!c.empty());
  CHECK(c.front() == select_algo(args(Coll::AllReduce, 4, 64 << 20), hosts));
  CHECK(std::count(c.begin(), c.end(), Algo::Hier) == 1);
}

TEST_CASE("a trial runs each candidate in blocks, keeps each one's better pass and picks the cheapest") {
  Trial tr({Algo::TwoShot, Algo::Rhd, Algo::Ring}, TrialShape{2, 2, 2});
  // Per pass: each candidate gets two warm-up calls and two timed ones, back to back.
  const Algo order[] = {Algo::TwoShot, Algo::Rhd, Algo::Ring};
  // Pass 1: rhd looks worst (a slow start); pass 2: rhd is the fastest. Warm-ups are huge and
  // must not count.
  const double pass_times[2][3] = {{3, 9, 4}, {3, 1, 4}};
  int calls = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (int k = 0; k < 3; ++k)
      for (int i = 0; i < 4; ++i) {
        CHECK(tr.current() == order[k]);
        bool last = tr.record(i < 2 ? 100.0 : pass_times[pass][k] + 0.1 * (i - 1));
        CHECK(last == (++calls == 24));
      }
  CHECK_FALSE(tr.decided());
  std::vector<double> s = tr.scores();
  REQUIRE(s.size() == 3);
  CHECK(s[0] == Approx(3.15));  // the mean of the timed calls
  CHECK(s[1] == Approx(1.15));
  CHECK(s[2] == Approx(4.15));
  tr.decide(s);
  CHECK(tr.decided());
  CHECK(tr.pick() == Algo::Rhd);
  CHECK_FALSE(tr.record(1.0));  // decided: nothing more is timed
  // The cost model's pick (the first) stays unless a rival is clearly faster.
  Trial tie({Algo::TwoShot, Algo::Rhd, Algo::Ring}, TrialShape{1, 1, 1});
  tie.decide({2.0, 1.95, 2.0});
  CHECK(tie.pick() == Algo::TwoShot);
  tie.decide({2.0, 1.85, 1.8});
  CHECK(tie.pick() == Algo::Ring);
  CHECK_THROWS(tie.decide({1.0}));
}

TEST_CASE("the trials' picks read back through CORAL_ALGO as the same choices") {
  Trials trials;
  auto decided = [&](Coll c, size_t bytes, Algo pick) {
    Trial t({pick, Algo::Ring}, TrialShape{0, 1, 1});
    t.decide({1.0, 2.0});
    trials.emplace(std::make_pair(static_cast<int>(c), trial_bucket(bytes)), t);
  };
  CHECK(as_overrides(trials).empty());
  decided(Coll::AllReduce, 20 << 10, Algo::OneShot);  // [16K, 32K)
  decided(Coll::AllReduce, 40 << 10, Algo::OneShot);  // [32K, 64K): merged with the one before
  decided(Coll::AllReduce, 300 << 10, Algo::Rhd);     // [256K, 512K): a gap before it
  decided(Coll::AllReduce, 5u << 20, Algo::TwoShot);  // [4M, 8M)
  trials.emplace(std::make_pair(static_cast<int>(Coll::AllReduce), trial_bucket(100 << 10)),
                 Trial({Algo::Rhd}, TrialShape{0, 1, 1}));  // still running: left out
  const std::string text = as_overrides(trials);
  CHECK(text == "allreduce:16K-64K:oneshot,256K-512K:rhd,4M-8M:twoshot");
  TuneParams t;
  t.single_host = true;
  t.rules = parse_overrides(text).rules;
  CHECK(select_algo(args(Coll::AllReduce, 8, 16 << 10), t) == Algo::OneShot);
  CHECK(select_algo(args(Coll::AllReduce, 8, (64 << 10) - 4), t) == Algo::OneShot);
  CHECK(select_algo(args(Coll::AllReduce, 8, 256 << 10), t) == Algo::Rhd);
  CHECK(select_algo(args(Coll::AllReduce, 8, 6u << 20), t) == Algo::TwoShot);
  TuneParams none = t;
  none.rules.clear();
  CHECK(select_algo(args(Coll::AllReduce, 8, 100 << 10), t) == select_algo(args(Coll::AllReduce, 8, 100 << 10), none));
}

TEST_CASE("CORAL_ALGO values print back in the grammar and parse to the same rules") {
  auto same = [](const std::vector<SizeRule>& x, const std::vector<SizeRule>& y) {
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i].coll != y[i].coll || x[i].lo != y[i].lo || x[i].hi != y[i].hi || x[i].algo != y[i].algo) return false;
    return true;
  };
  for (const char* text : {"rhd", "auto", "allreduce:0-4K:oneshot,4K-1M:rhd,1M-:ring;broadcast:0-64k:tree",
                           "allreduce:0-21846:oneshot,21846-2048K:twoshot,2G-:ring", "reducescatter:1536-:rhd"}) {
    INFO(text);
    const Overrides o = parse_overrides(text);
    const std::string printed = format_overrides(o);
    const Overrides back = parse_overrides(printed);
    CHECK(back.all == o.all);
    CHECK(same(back.rules, o.rules));
    CHECK(format_overrides(back) == printed);  // printing is canonical
  }
  CHECK(format_overrides(parse_overrides("allreduce:0-4K:oneshot,4K-1M:rhd,1M-:ring;broadcast:0-64k:tree")) ==
        "allreduce:0-4K:oneshot,4K-1M:rhd,1M-:ring;broadcast:0-64K:tree");
  CHECK(format_overrides(parse_overrides("allreduce:0-2048K:rhd,2048K-:ring")) == "allreduce:0-2M:rhd,2M-:ring");
  CHECK(format_overrides(parse_overrides("rhd")) == "rhd");
  CHECK(format_rules({}).empty());
  // Each collective's ranges come together, in their order.
  std::vector<SizeRule> mixed = {{Coll::AllReduce, 0, 1024, Algo::OneShot},
                                 {Coll::Broadcast, 0, SIZE_MAX, Algo::Tree},
                                 {Coll::AllReduce, 1024, SIZE_MAX, Algo::Ring}};
  CHECK(format_rules(mixed) == "allreduce:0-1K:oneshot,1K-:ring;broadcast:0-:tree");
  CHECK(parse_overrides(format_rules(mixed)).rules.size() == 3);
}

TEST_CASE("the one-host defaults are CORAL_ALGO rows by rank count that read back as the same rules") {
  const std::vector<RankRow>& rows = default_rows();
  REQUIRE(!rows.empty());
  CHECK(rows.front().lo == 1);
  CHECK(rows.back().hi == kAnyRanks);
  std::string lines;
  for (size_t i = 0; i < rows.size(); ++i) {
    const RankRow& r = rows[i];
    INFO("P=" << r.lo << "-" << r.hi << ": " << r.text);
    CHECK(r.lo <= r.hi);
    if (i > 0) CHECK(r.lo == rows[i - 1].hi + 1);  // no gap, no overlap
    const Overrides o = parse_overrides(r.text);
    CHECK(o.all == Algo::Auto);
    REQUIRE(o.rules.size() == r.rules.size());
    const std::string printed = format_rules(o.rules);
    CHECK(printed == r.text);  // the table is written as the printer writes it
    const std::vector<SizeRule> back = parse_overrides(printed).rules;
    REQUIRE(back.size() == r.rules.size());
    for (size_t k = 0; k < back.size(); ++k) {
      CHECK(back[k].coll == r.rules[k].coll);
      CHECK(back[k].lo == r.rules[k].lo);
      CHECK(back[k].hi == r.rules[k].hi);
      CHECK(back[k].algo == r.rules[k].algo);
    }
    // Every all-reduce size has a pick: the ranges start at 0 and run on without a gap to the end.
    size_t next = 0;
    for (const SizeRule& s : r.rules)
      if (s.coll == Coll::AllReduce) {
        CHECK(s.lo == next);
        next = s.hi;
      }
    CHECK(next == SIZE_MAX);
    const std::string hi = r.hi == kAnyRanks ? "" : std::to_string(r.hi);
    lines += "P=" + std::to_string(r.lo) + "-" + hi + ": " + printed + "\n";
  }
  CHECK(default_rules_text() == lines);
  for (int p : {1, 2, 3, 4, 5, 8, 9, 16, 63, 64, 65, 128, 1000, 100000}) {
    const RankRow* r = default_row(p);
    REQUIRE(r != nullptr);
    CHECK(r->lo <= p);
    CHECK(p <= r->hi);
  }
  CHECK(default_row(0) == nullptr);
}

TEST_CASE("a one-host row set as CORAL_ALGO picks what the defaults pick at its rank counts") {
  std::vector<size_t> sizes;
  for (int k = 0; k <= 30; ++k) {
    const size_t b = size_t(1) << k;
    for (size_t s : {b, b + 4, b * 3 / 2, b > 4 ? b - 4 : b}) sizes.push_back(s);
  }
  TuneParams bare;  // the latency path off: the defaults are the rows alone
  bare.single_host = true;
  bare.small_bytes = 0;
  bare.oneshot_max_ranks = 0;
  TuneParams full;  // as a communicator runs them
  full.single_host = true;
  for (const RankRow& r : default_rows()) {
    const int hi = std::min(r.hi, r.lo + 40);
    for (int p : {r.lo, (r.lo + hi) / 2, hi}) {
      TuneParams user_bare = bare, user_full = full;
      user_bare.rules = user_full.rules = parse_overrides(r.text).rules;
      for (size_t bytes : sizes) {
        const CollArgs a = args(Coll::AllReduce, p, bytes);
        if (a.count == 0) continue;
        INFO("P=" << p << " bytes=" << message_bytes(a) << " row " << r.text);
        CHECK(select_algo(a, user_bare) == select_algo(a, bare));
        // With the latency path on, the row and the defaults agree past it (within it the
        // defaults take one-shot or recursive doubling before any row).
        const size_t b = message_bytes(a);
        const bool latency = b <= full.small_bytes ||
                             (p <= full.oneshot_max_ranks && b * static_cast<size_t>(p - 1) <= full.oneshot_read_bytes);
        if (!latency) CHECK(select_algo(a, user_full) == select_algo(a, full));
      }
    }
  }
}

TEST_CASE("the one-host rows follow the rules they were written from at every power-of-two size") {
  // Up to 4 ranks two-shot, but rhd at P=4 from 256 KiB below 32 MiB; above 4 ranks rhd below
  // 128 KiB for P a power of two, else two-shot, and the ring from S = max(128 KiB, 256 P^3).
  TuneParams t;
  t.single_host = true;
  t.small_bytes = 0;
  t.oneshot_max_ranks = 0;
  for (int p = 1; p <= 128; ++p)
    for (int k = 2; k <= 30; ++k) {
      const size_t bytes = size_t(1) << k;
      const bool pof2 = (p & (p - 1)) == 0;
      Algo want = Algo::TwoShot;
      if (p <= 4)
        want = p == 4 && bytes >= (256u << 10) && bytes < (32u << 20) ? Algo::Rhd : Algo::TwoShot;
      else if (static_cast<double>(bytes) >= std::max(128.0 * 1024, 256.0 * p * p * p))
        want = Algo::Ring;
      else if (pof2 && bytes < (128u << 10))
        want = Algo::Rhd;
      INFO("P=" << p << " bytes=" << bytes);
      CHECK(select_algo(args(Coll::AllReduce, p, bytes), t) == want);
    }
}
