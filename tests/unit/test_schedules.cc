// The symbolic checker proves every builder's postcondition and deadlock freedom.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>

#include "collectives/folds.h"
#include "collectives/patterns/dbtree.h"
#include "collectives/registry.h"
#include "collectives/verify.h"

using namespace coral::collectives;

namespace {

std::vector<size_t> counts_for(int p) {
  std::vector<size_t> c = {0, 1, static_cast<size_t>(p - 1), static_cast<size_t>(p + 1), 13, 101};
  return c;
}

// An all-reduce of `count` elements over p ranks, in messages of at most `chunk`.
CollArgs allreduce_args(int p, size_t count, size_t chunk) {
  CollArgs a;
  a.coll = Coll::AllReduce;
  a.count = count;
  a.nranks = p;
  a.chunk = chunk;
  return a;
}

void check(Coll coll, Algo algo, int p, size_t count, size_t chunk, coralRedOp_t op, bool in_place, int root = 0) {
  CollArgs a;
  a.coll = coll;
  a.count = count;
  a.nranks = p;
  a.chunk = chunk;
  a.op = op;
  a.root = root;
  VerifyResult r = verify(a, algo, in_place);
  INFO(coll_name(coll) << " " << algo_name(algo) << " P=" << p << " count=" << count << " chunk=" << chunk
                       << " op=" << op << " in_place=" << in_place << " root=" << root);
  REQUIRE(r.error == "");
  REQUIRE(r.ok);
}

struct Combo {
  Coll coll;
  Algo algo;
};
const Combo kCombos[] = {
    {Coll::AllReduce, Algo::Ring},    {Coll::AllReduce, Algo::RecursiveDoubling},
    {Coll::AllReduce, Algo::Rhd},     {Coll::AllReduce, Algo::TwoShot},
    {Coll::AllReduce, Algo::OneShot}, {Coll::AllReduce, Algo::Tree},
    {Coll::AllReduce, Algo::Hier},    {Coll::ReduceScatter, Algo::Ring},
    {Coll::ReduceScatter, Algo::Rhd}, {Coll::AllGather, Algo::Ring},
    {Coll::AllGather, Algo::Rhd},     {Coll::Broadcast, Algo::Chain},
    {Coll::Broadcast, Algo::Tree},    {Coll::Reduce, Algo::Chain},
    {Coll::Reduce, Algo::Tree},       {Coll::Barrier, Algo::Dissemination},
};

// Reduce-scatter and all-gather counts are per rank (P times more elements in all), and
// one-shot moves P^2 count elements: the sweeps keep these to smaller counts.
bool heavy_counts(Combo c) {
  return c.coll == Coll::ReduceScatter || c.coll == Coll::AllGather || c.algo == Algo::OneShot;
}

// Every algorithm of every collective at P, over `counts` (per-rank counts for RS/AG), with
// P worker threads' worth of cases split over two threads.
void sweep(const std::vector<int>& ps, const std::function<std::vector<size_t>(int, Combo)>& counts) {
  std::vector<std::string> errors(2);
  auto work = [&](int part) {
    for (size_t i = part; i < ps.size(); i += 2) {
      int p = ps[i];
      for (const Combo& c : kCombos)
        for (size_t n : c.coll == Coll::Barrier ? std::vector<size_t>{0} : counts(p, c)) {
          CollArgs a;
          a.coll = c.coll;
          a.count = n;
          a.nranks = p;
          a.chunk = 1 << 20;
          a.root = p / 2;
          a.op = n % 2 ? coralAvg : coralSum;
          const auto t0 = std::chrono::steady_clock::now();
          VerifyResult r = verify(a, c.algo, p % 2 == 0);
          const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          if (secs > 5)  // the long sweep's budget is minutes: name what eats it
            std::fprintf(stderr, "slow: %s %s P=%d count=%zu took %.1f s\n", coll_name(c.coll), algo_name(c.algo), p, n,
                         secs);
          if (!r.ok || !r.error.empty()) {
            errors[part] = std::string(coll_name(c.coll)) + " " + algo_name(c.algo) + " P=" + std::to_string(p) +
                           " count=" + std::to_string(n) + ": " + r.error;
            return;
          }
        }
    }
  };
  std::thread t(work, 1);
  work(0);
  t.join();
  CHECK(errors[0] == "");
  CHECK(errors[1] == "");
}

// P = 1..64, every awkward count, two chunk sizes, sum and average, in and out of place.
void check_allreduce_1_to_64(Algo algo) {
  for (int p = 1; p <= 64; ++p)
    for (size_t n : counts_for(p))
      for (size_t chunk : {size_t(3), size_t(1) << 20}) {
        check(Coll::AllReduce, algo, p, n, chunk, coralSum, p % 2 == 0);
        check(Coll::AllReduce, algo, p, n, chunk, coralAvg, p % 2 == 1);
      }
}

}  // namespace

TEST_CASE("every algorithm of every collective holds for P = 1..160 and a stride to 512") {
  // Every P up to 512 with every count is the long test (minutes); this one runs in CI.
  // CORAL_TEST_QUICK=1 (the sanitizer pass, where ASan makes this minutes): P = 1..48 and a
  // few larger P, powers of two and their neighbours among them.
  std::vector<int> ps;
  const char* quick = std::getenv("CORAL_TEST_QUICK");
  if (quick && std::string(quick) == "1") {
    for (int p = 1; p <= 48; ++p) ps.push_back(p);
    ps.insert(ps.end(), {63, 64, 65, 97, 160, 255, 256, 257, 383, 512});
  } else {
    for (int p = 1; p <= 512; p += p < 160 ? 1 : 7) ps.push_back(p);
    ps.push_back(512);
  }
  // Heavy counts keep to small values here (and get P-1, P+1 up to 64). The counts rotate with
  // P so that every P meets two of them and every count meets every algorithm often (the full
  // set for every P is the long test below).
  sweep(ps, [](int p, Combo c) {
    std::vector<size_t> pool = {0, 1, 13, 2, static_cast<size_t>(p - 1), static_cast<size_t>(p + 1)};
    size_t k = heavy_counts(c) ? 4 : 6;
    return std::vector<size_t>{pool[static_cast<size_t>(p) % k], pool[static_cast<size_t>(p + 3) % k]};
  });
}

TEST_CASE("long: every P from 1 to 512 with every count, and a sample of P up to 4096", "[.][long]") {
  std::vector<int> ps;
  for (int p = 1; p <= 512; p++) ps.push_back(p);
  sweep(ps, [](int p, Combo c) {
    // Heavy counts keep to 0, 1, a prime and a larger odd count from P = 129 (P-1 and P+1 per
    // rank made P^2 elements per rank: hours at P = 512).
    if (heavy_counts(c) && p > 128) return std::vector<size_t>{0, 1, 13, 101};
    return std::vector<size_t>{0, 1, static_cast<size_t>(p - 1), static_cast<size_t>(p + 1), 101, 1001};
  });
  sweep({600, 777, 1000, 1024, 1500, 2048, 3000, 4095, 4096}, [](int p, Combo c) {
    if (heavy_counts(c)) return std::vector<size_t>{1, 3};
    return std::vector<size_t>{1, static_cast<size_t>(p + 1), 997};
  });
}

TEST_CASE("ring reduce-scatter, all-gather and all-reduce hold for P = 1..64") {
  for (int p = 1; p <= 64; ++p)
    for (size_t n : counts_for(p))
      for (size_t chunk : {size_t(1), size_t(4), size_t(1) << 20}) {
        if (chunk == 1 && p > 16) continue;  // one element per message: P*count steps, slow
        for (bool ip : {false, true}) {
          check(Coll::AllReduce, Algo::Ring, p, n, chunk, coralSum, ip);
          check(Coll::ReduceScatter, Algo::Ring, p, n, chunk, coralSum, ip);
          check(Coll::AllGather, Algo::Ring, p, n, chunk, coralSum, ip);
        }
        check(Coll::AllReduce, Algo::Ring, p, n, chunk, coralAvg, false);
        check(Coll::ReduceScatter, Algo::Ring, p, n, chunk, coralAvg, true);
      }
}

TEST_CASE("recursive doubling all-reduce holds, power of two or not") {
  check_allreduce_1_to_64(Algo::RecursiveDoubling);
}

TEST_CASE("one-shot all-reduce holds in and out of place") {
  for (int p = 1; p <= 24; ++p)
    for (size_t n : counts_for(p))
      for (bool ip : {false, true}) {
        check(Coll::AllReduce, Algo::OneShot, p, n, 4, coralSum, ip);
        check(Coll::AllReduce, Algo::OneShot, p, n, 1 << 20, coralAvg, ip);
      }
}

TEST_CASE("two-shot all-reduce holds in and out of place") {
  for (int p = 1; p <= 40; ++p)
    for (size_t n : counts_for(p))
      for (size_t chunk : {size_t(1), size_t(3), size_t(1) << 20})
        for (bool ip : {false, true}) check(Coll::AllReduce, Algo::TwoShot, p, n, chunk, ip ? coralAvg : coralSum, ip);
}

TEST_CASE("chain broadcast and reduce hold for every root") {
  for (int p : {1, 2, 3, 4, 5, 8, 13, 32})
    for (int root = 0; root < p; ++root)
      for (size_t n : {size_t(0), size_t(1), size_t(37)}) {
        check(Coll::Broadcast, Algo::Chain, p, n, 5, coralSum, root % 2 == 0, root);
        check(Coll::Reduce, Algo::Chain, p, n, 5, root % 3 ? coralSum : coralAvg, root % 2 == 1, root);
      }
}

TEST_CASE("recursive halving/doubling: all-reduce, reduce-scatter and all-gather, any P") {
  for (int p = 1; p <= 70; ++p)
    for (size_t n : counts_for(p))
      for (size_t chunk : {size_t(2), size_t(1) << 20}) {
        if (chunk == 2 && p > 20 && n > 13) continue;  // one message per two elements: slow
        check(Coll::AllReduce, Algo::Rhd, p, n, chunk, coralSum, p % 2 == 0);
        check(Coll::AllReduce, Algo::Rhd, p, n, chunk, coralAvg, p % 2 == 1);
        check(Coll::ReduceScatter, Algo::Rhd, p, n, chunk, p % 3 ? coralSum : coralAvg, p % 2 == 0);
        check(Coll::AllGather, Algo::Rhd, p, n, chunk, coralSum, p % 2 == 1);
      }
}

TEST_CASE("double binary trees: two well-formed trees, complementary leaves, log depth") {
  for (int p = 1; p <= 300; p++) {
    std::vector<int> leaf_in(p, 0);
    for (int t = 0; t < 2; t++) {
      int roots = 0, depth_max = 0;
      for (int r = 0; r < p; r++) {
        auto n = coral::patterns::dbtree_node(r, p, t);
        roots += n.parent < 0;
        REQUIRE(n.children.size() <= 2);
        if (n.children.empty()) leaf_in[r]++;
        for (int c : n.children) REQUIRE(coral::patterns::dbtree_node(c, p, t).parent == r);
        int d = 0;
        for (int q = r; coral::patterns::dbtree_node(q, p, t).parent >= 0;
             q = coral::patterns::dbtree_node(q, p, t).parent)
          REQUIRE(++d <= p);
        depth_max = std::max(depth_max, d);
      }
      INFO("P=" << p << " tree " << t);
      CHECK(roots == 1);
      int lg = 0;
      while ((1 << lg) < p) lg++;
      CHECK(depth_max <= lg + 1);
    }
    if (p % 2 == 0 && p > 2)
      for (int r = 0; r < p; r++) CHECK(leaf_in[r] <= 1);  // never a leaf in both trees
  }
  check_allreduce_1_to_64(Algo::Tree);
}

TEST_CASE("tree all-reduce sends chunks up while earlier ones come down") {
  for (int p : {4, 8, 13, 64}) {
    int lg = 0;
    for (int q = p; q > 1; q /= 2) lg++;
    for (int t = 0; t < 2; t++) {
      int height = 0;
      for (int r = 0; r < p; r++) {
        int d = 0;
        for (int q = r; (q = coral::patterns::dbtree_node(q, p, t).parent) >= 0;) d++;
        height = std::max(height, d);
      }
      CHECK(height <= lg);  // the schedule's lag, 2 floor(log2 P), covers a round trip
    }
    CollArgs x;
    x.coll = Coll::AllReduce;
    x.nranks = p;
    x.chunk = 64;
    x.count = 2 * x.chunk * static_cast<size_t>(4 * lg + 4);  // more chunks than the lag
    x.dtype = coralFloat32;
    int overlapped = 0;
    for (int r = 0; r < p; r++) {
      x.rank = r;
      Schedule s = build(x, Algo::Tree);
      const int parent = coral::patterns::dbtree_node(r, p, 0).parent;
      if (parent < 0) continue;
      size_t first_down = s.steps.size(), last_up = 0;
      for (size_t i = 0; i < s.steps.size(); i++) {
        // Tree 0 carries the first half of the vector; the same peer may be a child in tree 1.
        const Step& st = s.steps[i];
        if (st.peer != parent) continue;
        if (st.kind == OpKind::Recv && st.dst.off < x.count / 2) first_down = std::min(first_down, i);
        if (st.kind == OpKind::Send && st.src.off < x.count / 2) last_up = i;
      }
      overlapped += first_down < last_up;
    }
    INFO("P=" << p);
    CHECK(overlapped == p - 1);  // every non-root rank of tree 0
  }
}

TEST_CASE("hierarchical all-reduce holds over even, uneven and interleaved hosts") {
  std::vector<std::vector<int>> layouts;
  auto sizes = [&](std::vector<int> per_host) {  // consecutive ranks per host
    std::vector<int> h;
    for (size_t g = 0; g < per_host.size(); g++)
      h.insert(h.end(), static_cast<size_t>(per_host[g]), static_cast<int>(g));
    layouts.push_back(h);
  };
  sizes({3, 5, 1});
  sizes({4, 4});
  sizes({2, 2, 2, 2});
  sizes({1, 1, 1});
  sizes({8});
  sizes({5, 3, 3, 6});
  sizes({2, 7});
  layouts.push_back({0, 1, 0, 1, 0, 1});     // hosts interleaved by rank
  layouts.push_back({2, 0, 1, 2, 0, 1, 1});  // unordered host ids
  for (auto& h : layouts) {
    for (size_t n : {size_t(0), size_t(1), size_t(5), size_t(13), size_t(101)})
      for (size_t chunk : {size_t(2), size_t(1) << 20})
        for (bool ip : {false, true}) {
          CollArgs a;
          a.coll = Coll::AllReduce;
          a.count = n;
          a.nranks = static_cast<int>(h.size());
          a.chunk = chunk;
          a.hosts = &h;
          a.op = ip ? coralAvg : coralSum;
          VerifyResult r = verify(a, Algo::Hier, ip);
          INFO("hosts of size " << h.size() << " count " << n << " chunk " << chunk << " in_place " << ip);
          REQUIRE(r.error == "");
          REQUIRE(r.ok);
        }
  }
}

TEST_CASE("binomial-tree broadcast and reduce hold for every root") {
  for (int p : {1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 31, 33})
    for (int root = 0; root < p; ++root)
      for (size_t n : {size_t(0), size_t(1), size_t(37)}) {
        check(Coll::Broadcast, Algo::Tree, p, n, 5, coralSum, root % 2 == 0, root);
        check(Coll::Reduce, Algo::Tree, p, n, 5, root % 3 ? coralSum : coralAvg, root % 2 == 1, root);
      }
}

TEST_CASE("barrier and send/recv schedules are well formed") {
  for (int p = 1; p <= 64; ++p) check(Coll::Barrier, Algo::Dissemination, p, 0, 1, coralSum, false);
  for (int p = 1; p <= 17; ++p) {
    CollArgs a;
    a.coll = Coll::Barrier;
    a.nranks = p;
    a.rank = p - 1;
    int rounds = 0;
    while ((1 << rounds) < p) rounds++;
    CHECK(build(a, Algo::Dissemination).steps.size() == static_cast<size_t>(2 * rounds));
  }
  CollArgs s;
  s.coll = Coll::Send;
  s.count = 10;
  s.chunk = 4;
  s.nranks = 2;
  s.root = 1;
  CHECK(build(s, Algo::Direct).steps.size() == 3);
  s.count = 0;
  CHECK(build(s, Algo::Direct).steps.size() == 1);  // an empty message still travels
}

// A builder of `algo`'s schedules with edit(rank, step) applied to every step.
std::function<Schedule(const CollArgs&)> edited(Algo algo, std::function<void(int, Step&)> edit) {
  return [algo, edit](const CollArgs& x) {
    Schedule s = build(x, algo);
    for (Step& st : s.steps) edit(x.rank, st);
    return s;
  };
}

TEST_CASE("the checker catches broken schedules") {
  CollArgs a = allreduce_args(4, 10, 100);
  auto ring = [](const CollArgs& x) { return build(x, Algo::Ring); };
  REQUIRE(verify_with(a, ring, false).ok);
  // Rank 2 forgets its last all-gather receive: a message is left over, its block is garbage.
  auto drop_last = [&](const CollArgs& x) {
    Schedule s = ring(x);
    if (x.rank == 2) s.steps.pop_back();
    return s;
  };
  CHECK_FALSE(verify_with(a, drop_last, false).ok);
  // Rank 1 reduces its own input twice.
  auto double_count = edited(Algo::Ring, [](int rank, Step& st) {
    if (rank == 1 && st.kind == OpKind::RecvReduce) st.src = Ref{Buf::Recv, st.dst.off};
  });
  CHECK_FALSE(verify_with(a, double_count, false).ok);
  // Two ranks both receive first: deadlock.
  a.nranks = 2;
  auto recv_first = [&](const CollArgs& x) {
    Schedule s = ring(x);
    std::swap(s.steps[0], s.steps[1]);
    return s;
  };
  VerifyResult r = verify_with(a, recv_first, false);
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.error, Catch::Contains("deadlock"));
  // Sends to a different peer than the one that receives.
  a.nranks = 3;
  auto wrong_peer = [&](const CollArgs& x) {
    Schedule s = ring(x);
    if (x.rank == 0) s.steps[0].peer = 2;
    return s;
  };
  CHECK_FALSE(verify_with(a, wrong_peer, false).ok);
  // A send marked stable whose source is overwritten later (recursive doubling reuses it).
  a.nranks = 4;
  auto unstable = edited(Algo::RecursiveDoubling, [](int, Step& st) {
    if (st.kind == OpKind::Send) st.stable_src = true;
  });
  r = verify_with(a, unstable, false);
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.error, Catch::Contains("stable_src"));
  CollArgs bad = a;
  bad.chunk = 0;
  CHECK_THROWS(build(bad, Algo::Ring));
}

TEST_CASE("posts are a channel of their own, marked alike on both sides") {
  CollArgs a = allreduce_args(5, 7, 3);
  auto oneshot = [](const CollArgs& x) { return build(x, Algo::OneShot); };
  Schedule s = oneshot(a);
  size_t posted = 0;
  for (const Step& st : s.steps) posted += st.posted;
  CHECK(posted == 3 * 2 * 4);  // 3 chunks, each sent to 4 peers and received from 4
  REQUIRE(verify_with(a, oneshot, false).ok);
  // Rank 3 takes rank 0's post as an ordinary message: it never comes on that channel.
  auto unmarked = edited(Algo::OneShot, [](int rank, Step& st) {
    if (rank == 3 && st.peer == 0 && st.kind != OpKind::Send) st.posted = false;
  });
  VerifyResult r = verify_with(a, unmarked, false);
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.error, Catch::Contains("deadlock"));
  // Only sends and plain receives can be posted.
  auto forwarding = edited(Algo::Ring, [](int, Step& st) {
    if (st.kind == OpKind::RecvReduceSend) st.posted = true;
  });
  r = verify_with(a, forwarding, false);
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.error, Catch::Contains("posted"));
}

TEST_CASE("folds: found in rank order, shortened when their scratch lives on, held until done") {
  CollArgs a = allreduce_args(4, 3, 100);
  auto at = [&](int rank) {
    CollArgs x = a;
    x.rank = rank;
    return build(x, Algo::OneShot);
  };
  auto step = [](int64_t k) { return FoldInput{k, {}}; };
  auto same = [](const std::vector<FoldInput>& got, const std::vector<FoldInput>& want) {
    if (got.size() != want.size()) return false;
    for (size_t i = 0; i < got.size(); ++i)
      if (got[i].step != want[i].step ||
          (got[i].step < 0 && (got[i].local.buf != want[i].local.buf || got[i].local.off != want[i].local.off)))
        return false;
    return true;
  };
  const Ref mine{Buf::Send, 0};
  // Steps 0-2 post; then rank r folds x_0 .. x_3, its own vector in its place.
  Schedule s2 = at(2);
  CHECK(fold_lengths(s2) == std::vector<uint32_t>{0, 0, 0, 4, 0, 0, 0});
  CHECK(same(fold_inputs(s2, 3, 4), {step(3), step(4), {-1, mine}, step(6)}));
  Schedule s0 = at(0), s1 = at(1);
  CHECK(fold_lengths(s0)[3] == 3);
  CHECK(same(fold_inputs(s0, 3, 3), {{-1, mine}, step(3), step(4), step(5)}));
  CHECK(same(fold_inputs(s1, 3, 3), {step(3), {-1, mine}, step(4), step(5)}));
  // Scratch read after the fold: only the part before the accumulator leaves scratch is one.
  s2.steps.push_back(send(0, {Buf::Scratch, 0}, 3));
  CHECK(fold_lengths(s2) == std::vector<uint32_t>{0, 0, 0, 2, 0, 0, 0, 0});
  // A fold holds its inputs' slots: rank 1's third message to rank 0 waits for rank 0's fold,
  // which waits for rank 2, which waits for rank 1. Without the fold, the same order runs through.
  a.nranks = 3;
  a.count = 1;
  auto hand = [](bool fused) {
    return [fused](const CollArgs& x) {
      Schedule s{"hand", 3, x.rank, {}, 1, 1};
      s.scratch_elems = 1;
      const Ref in{Buf::Send, 0}, out{Buf::Recv, 0}, tmp{Buf::Scratch, 0};
      if (x.rank == 0) {
        s.steps.push_back(recv(1, tmp, 1));
        s.steps.push_back(recv_reduce(2, fused ? tmp : in, out, 1));  // in: no fold
        s.steps.push_back(recv(1, tmp, 1));
        s.steps.push_back(recv(1, tmp, 1));
      } else if (x.rank == 1) {
        for (int i = 0; i < 3; ++i) s.steps.push_back(send(0, in, 1));
        s.steps.push_back(send(2, in, 1));
      } else {
        s.steps.push_back(recv(1, out, 1));
        s.steps.push_back(send(0, in, 1));
      }
      return s;
    };
  };
  VerifyResult r = verify_with(a, hand(true), false);
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.error, Catch::Contains("deadlock"));
  r = verify_with(a, hand(false), false);
  CHECK_THAT(r.error, !Catch::Contains("deadlock"));  // wrong sums, but every step runs
}

TEST_CASE("ring all-reduce sends 2(P-1)/P of the data per rank") {
  for (int p : {2, 3, 4, 8, 16}) {
    CollArgs a;
    a.coll = Coll::AllReduce;
    a.count = 1000 * p;
    a.nranks = p;
    a.chunk = 1 << 20;
    for (int r = 0; r < p; ++r) {
      a.rank = r;
      size_t sent = 0;
      for (const Step& st : build(a, Algo::Ring).steps)
        if (st.kind == OpKind::Send || st.kind == OpKind::RecvReduceSend || st.kind == OpKind::RecvCopySend)
          sent += st.count;
      CHECK(sent == 2 * static_cast<size_t>(p - 1) * 1000);
    }
  }
}
