// The verifier proves the schedules of all-to-all, all-to-all-v, gather, scatter, all-gather-v and
// reduce-scatter-v: every algorithm, in and out of place, P = 1..160, awkward and uneven counts
// (zeros among them), several chunks per message, roots at both ends and in the middle. And it
// catches a broken builder of each, so these checks can fail.
#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "collectives/registry.h"
#include "collectives/verify.h"

using namespace coral::collectives;

namespace {

uint64_t mix(uint64_t x) {  // splitmix64: deterministic counts without a generator's state
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A count in [0, 2 mean], zero about one time in five.
size_t uneven(uint64_t seed, size_t mean) {
  const uint64_t h = mix(seed);
  return h % 5 == 0 ? 0 : static_cast<size_t>((h >> 8) % (2 * mean + 1));
}

std::vector<size_t> uneven_counts(int p, size_t mean, uint64_t seed) {
  std::vector<size_t> c;
  for (int j = 0; j < p; ++j) c.push_back(uneven(seed * 1000003 + static_cast<uint64_t>(j), mean));
  return c;
}

// Where blocks sit: back to back, with gaps of up to 3 elements, or back to front.
enum class Layout { Packed, Gaps, Reversed };
constexpr Layout kLayouts[] = {Layout::Packed, Layout::Gaps, Layout::Reversed};

std::vector<size_t> displs_for(const std::vector<size_t>& counts, Layout l, uint64_t seed) {
  const size_t p = counts.size();
  std::vector<size_t> d(p);
  size_t at = 0;
  for (size_t k = 0; k < p; ++k) {
    const size_t j = l == Layout::Reversed ? p - 1 - k : k;
    if (l == Layout::Gaps) at += mix(seed + k) % 4;
    d[j] = at;
    at += counts[j];
  }
  return d;
}

std::string describe(const CollArgs& a, Algo algo) {
  return std::string(coll_name(a.coll)) + " " + algo_name(algo) + " P=" + std::to_string(a.nranks) +
         " count=" + std::to_string(a.count) + " chunk=" + std::to_string(a.chunk) + " root=" + std::to_string(a.root) +
         " in_place=" + std::to_string(a.in_place);
}

// Every P to 160 meets count 1; 0 and 7 (in chunks of 3) come every P to 48 and a stride beyond;
// 1000 (chunks of 300) and 2^20+3 (four chunks of 2^18) where P is small. Past 16 ranks each
// count runs in place or out of place, alternating with P: the sweep stays within seconds.
bool sampled(int p) { return p <= 48 || p % 7 == 0 || p == 160; }

std::vector<size_t> block_counts(int p) {
  std::vector<size_t> c = {1};
  if (sampled(p)) c.insert(c.end(), {0, 7});
  if (p <= 5 || p == 8 || p == 13) c.push_back(1000);
  if (p == 2 || p == 3) c.push_back((size_t(1) << 20) + 3);
  return c;
}

size_t chunk_for(size_t count) { return count > 1000 ? size_t(1) << 18 : count == 1000 ? 300 : 3; }

std::vector<bool> places(int p, size_t k) {
  if (p <= 16) return {false, true};
  return {(static_cast<size_t>(p) + k) % 2 == 1};
}

// "" if the verifier proves the call, else what failed and why.
std::string block_error(Coll coll, Algo algo, int p, size_t count, int root, bool in_place) {
  CollArgs a;
  a.coll = coll;
  a.nranks = p;
  a.count = count;
  a.root = root;
  a.chunk = chunk_for(count);
  a.in_place = in_place;
  const VerifyResult r = verify(a, algo, in_place);
  return r.ok && r.error.empty() ? "" : describe(a, algo) + ": " + r.error;
}

// Stops a sweep at its first failure.
#define OR_FAIL(check)                                    \
  do {                                                    \
    if (std::string e_ = (check); !e_.empty()) return e_; \
  } while (0)

// Runs per_p for P = 1..160 on two threads (these sweeps are most of this file's time) and
// reports each thread's first failure.
void sweep_ps(const std::function<std::string(int p)>& per_p) {
  std::string err[2];
  auto work = [&](int part) {
    for (int p = 1 + part; p <= 160 && err[part].empty(); p += 2) err[part] = per_p(p);
  };
  std::thread t(work, 1);
  work(0);
  t.join();
  CHECK(err[0] == "");
  CHECK(err[1] == "");
}

// All-to-all-v's arguments: rank i sends rank j m(i, j) elements (symmetric: m(i, j) = m(j, i)),
// each rank's layouts chosen by rank.
struct AllToAllv {
  int p;
  size_t mean, chunk;
  uint64_t seed;
  bool symmetric;
  std::function<Layout(int rank, bool send)> layout;
  std::function<bool(int rank)> in_place;

  size_t m(int i, int j) const {
    if (symmetric && i > j) std::swap(i, j);
    return uneven(seed * 7919 + static_cast<uint64_t>(i) * 4096 + static_cast<uint64_t>(j), mean);
  }
  CollArgs operator()(int r) const {
    auto v = std::make_shared<VCounts>();
    for (int j = 0; j < p; ++j) {
      v->send_counts.push_back(m(r, j));
      v->recv_counts.push_back(m(j, r));
    }
    // One seed for both sides: one layout then gives one set of places (symmetric counts).
    v->send_displs = displs_for(v->send_counts, layout(r, true), seed + static_cast<uint64_t>(r));
    v->recv_displs = displs_for(v->recv_counts, layout(r, false), seed + static_cast<uint64_t>(r));
    CollArgs a;
    a.coll = Coll::AllToAllv;
    a.nranks = p;
    a.rank = r;
    a.chunk = chunk;
    a.count = std::accumulate(v->recv_counts.begin(), v->recv_counts.end(), size_t{0});
    a.in_place = in_place(r);
    a.v = std::move(v);
    return a;
  }
};

std::string alltoallv_error(const AllToAllv& x, const std::string& what) {
  const VerifyResult r = verify_ranks(x, Algo::Pairwise);
  if (r.ok && r.error.empty()) return "";
  return "alltoallv P=" + std::to_string(x.p) + " mean=" + std::to_string(x.mean) +
         " chunk=" + std::to_string(x.chunk) + " " + what + ": " + r.error;
}

// The same counts on every rank: all-gather-v (at displs) and reduce-scatter-v (back to back).
CollArgs v_args(Coll coll, int p, const std::vector<size_t>& counts, const std::vector<size_t>& displs, size_t chunk) {
  auto v = std::make_shared<VCounts>();
  v->recv_counts = counts;
  if (coll == Coll::AllGatherv) v->recv_displs = displs;
  CollArgs a;
  a.coll = coll;
  a.nranks = p;
  a.chunk = chunk;
  a.v = std::move(v);
  return a;
}

// Rank r's own count, as the C API fills it in.
std::function<CollArgs(int)> per_rank(const CollArgs& base, bool in_place) {
  return [base, in_place](int r) {
    CollArgs a = base;
    a.rank = r;
    a.count = a.v->recv_counts[r];
    a.in_place = in_place;
    return a;
  };
}

std::vector<int> sample_ps() { return {1, 2, 3, 4, 5, 7, 8, 13, 24}; }

}  // namespace

TEST_CASE("all-to-all: pairwise and Bruck hold for P = 1..160, in and out of place") {
  sweep_ps([](int p) {
    const std::vector<size_t> counts = block_counts(p);
    for (size_t k = 0; k < counts.size(); ++k)
      for (bool ip : places(p, k)) {
        if (counts[k] > 1000 && ip != (p == 2)) continue;  // a million elements: once per P
        OR_FAIL(block_error(Coll::AllToAll, Algo::Pairwise, p, counts[k], 0, ip));
        if (counts[k] <= 1000 || p <= 2) OR_FAIL(block_error(Coll::AllToAll, Algo::Bruck, p, counts[k], 0, ip));
      }
    return std::string();
  });
}

TEST_CASE("all-to-all-v: uneven counts with zeros, any layout, in place or not, P = 1..160") {
  static auto mixed = [](int r, bool send) { return kLayouts[(r + (send ? 0 : 1)) % 3]; };
  static auto same = [](int r, bool) { return kLayouts[r % 3]; };
  static auto none = [](int) { return false; };
  static auto all = [](int) { return true; };
  sweep_ps([](int p) {
    const uint64_t seed = static_cast<uint64_t>(p);
    const size_t chunk = sampled(p) ? 2 : 1 << 20;
    // Out of place: each rank's own layouts, rotating over ranks.
    OR_FAIL(alltoallv_error({p, 3, chunk, seed, false, mixed, none}, "out of place"));
    // In place with one layout for both sides (blocks land where theirs leave), with differing
    // layouts (every block waits in scratch), and with only some ranks in place.
    if (p <= 16 || p % 3 == 0) OR_FAIL(alltoallv_error({p, 3, chunk, seed, true, same, all}, "in place, one layout"));
    if (p <= 16 || p % 3 == 1)
      OR_FAIL(alltoallv_error({p, 3, chunk, seed, false, mixed, all}, "in place, two layouts"));
    if (p <= 16 || p % 3 == 2)
      OR_FAIL(
          alltoallv_error({p, 3, chunk, seed, true, same, [](int r) { return r % 2 == 0; }}, "even ranks in place"));
    return std::string();
  });
  auto gaps = [](int, bool) { return Layout::Gaps; };
  for (int p : sample_ps()) {
    CHECK(alltoallv_error({p, 1000, 300, 99, false, mixed, none}, "large, out of place") == "");
    CHECK(alltoallv_error({p, 1000, 300, 99, true, gaps, all}, "large, in place") == "");
    CHECK(alltoallv_error({p, 1000, 300, 99, false, mixed, all}, "large, in place, two layouts") == "");
  }
  // Every count zero: nothing travels.
  CHECK(alltoallv_error({9, 0, 4, 1, false, gaps, none}, "empty") == "");
}

TEST_CASE("gather and scatter: direct and tree hold for roots 0, P-1 and the middle, P = 1..160") {
  sweep_ps([](int p) {
    std::vector<int> roots = {0};
    for (int r : {p - 1, p / 2})
      if (r != roots.back() && r != 0) roots.push_back(r);
    const std::vector<size_t> counts = block_counts(p);
    for (size_t ri = 0; ri < roots.size(); ++ri)
      for (size_t k = 0; k < counts.size(); ++k) {
        if (counts[k] > 1000 && ri + 1 != roots.size()) continue;
        for (bool ip : places(p, k + ri))
          if (counts[k] <= 1000 || ip == (p == 2))
            for (Coll c : {Coll::Gather, Coll::Scatter})
              for (Algo algo : {Algo::Direct, Algo::Tree}) OR_FAIL(block_error(c, algo, p, counts[k], roots[ri], ip));
      }
    return std::string();
  });
  // Every root of the trees, whose spans wrap past rank P-1 at the root's buffer.
  for (int p : {5, 6, 7, 9, 12, 17})
    for (int root = 0; root < p; ++root)
      for (Coll c : {Coll::Gather, Coll::Scatter}) CHECK(block_error(c, Algo::Tree, p, 5, root, root % 2 == 1) == "");
}

TEST_CASE("all-gather-v and reduce-scatter-v: uneven counts with zeros, any layout, P = 1..160") {
  static auto error = [](Coll coll, int p, size_t mean, size_t chunk, Layout l, bool ip, coralRedOp_t op) {
    const std::vector<size_t> counts = uneven_counts(p, mean, static_cast<uint64_t>(p) + mean);
    CollArgs base = v_args(coll, p, counts, displs_for(counts, l, static_cast<uint64_t>(p)), chunk);
    base.op = op;
    const VerifyResult r = verify_ranks(per_rank(base, ip), Algo::Ring);
    if (r.ok && r.error.empty()) return std::string();
    return std::string(coll_name(coll)) + " P=" + std::to_string(p) + " mean=" + std::to_string(mean) +
           " chunk=" + std::to_string(chunk) + " layout=" + std::to_string(static_cast<int>(l)) +
           " in_place=" + std::to_string(ip) + " op=" + std::to_string(op) + ": " + r.error;
  };
  sweep_ps([](int p) {
    const size_t chunk = sampled(p) ? 2 : 1 << 20;
    const Layout l = kLayouts[p % 3];
    for (bool ip : places(p, 0)) {
      OR_FAIL(error(Coll::AllGatherv, p, 3, chunk, l, ip, coralSum));
      OR_FAIL(error(Coll::ReduceScatterv, p, 3, chunk, Layout::Packed, !ip, ip ? coralAvg : coralSum));
    }
    return std::string();
  });
  for (int p : sample_ps())
    for (Layout l : kLayouts)
      for (bool ip : {false, true}) {
        CHECK(error(Coll::AllGatherv, p, 1000, 300, l, ip, coralSum) == "");
        if (l == Layout::Packed) CHECK(error(Coll::ReduceScatterv, p, 1000, 300, l, ip, coralAvg) == "");
      }
  for (int p : {1, 2, 3}) {
    CHECK(error(Coll::AllGatherv, p, (1 << 20) + 3, 1 << 18, Layout::Gaps, p == 2, coralSum) == "");
    CHECK(error(Coll::ReduceScatterv, p, (1 << 20) + 3, 1 << 18, Layout::Packed, p == 2, coralSum) == "");
  }
}

TEST_CASE("in-place all-to-all: no scratch but blocks that arrive first, and ranks may mix") {
  for (int p : {1, 2, 3, 4, 7, 8, 16}) {
    CollArgs a;
    a.coll = Coll::AllToAll;
    a.nranks = p;
    a.count = 10;
    a.rank = p - 1;
    CHECK(build(a, Algo::Pairwise).scratch_elems == 0);
    a.in_place = true;
    // Blocks from r-k for k < P-k: under half of them.
    CHECK(build(a, Algo::Pairwise).scratch_elems == static_cast<size_t>((p - 1) / 2) * a.count);
    // All-to-all-v with one layout for both sides does the same; with two, all waits in scratch.
    for (bool one : {true, false}) {
      const AllToAllv v{p,
                        10,
                        4,
                        3,
                        one,
                        [one](int, bool send) { return one || send ? Layout::Gaps : Layout::Reversed; },
                        [](int) { return true; }};
      const int r = p - 1;
      const CollArgs x = v(r);
      const VCounts& c = *x.v;
      const bool same = c.send_displs == c.recv_displs && c.send_counts == c.recv_counts;
      INFO("alltoallv P=" << p << " one layout " << one);
      if (p > 1) CHECK(same == one);
      size_t want = same ? 0 : x.count;
      for (int k = 1; same && k < p - k; ++k) want += c.recv_counts[(r - k + p) % p];
      CHECK(build(x, Algo::Pairwise).scratch_elems == want);
    }
    // What travels depends on nothing but the counts: ranks in place and not can meet.
    for (Algo algo : {Algo::Pairwise, Algo::Bruck}) {
      const VerifyResult r = verify_ranks(
          [&](int rank) {
            CollArgs x = a;
            x.in_place = rank % 3 == 1;
            return x;
          },
          algo);
      INFO("P=" << p << " " << algo_name(algo));
      CHECK(r.error == "");
    }
  }
}

TEST_CASE("bytes and messages: pairwise sends P-1 blocks, trees take log2 P messages at the root") {
  for (int p : {2, 5, 8, 13, 64}) {
    CollArgs a;
    a.coll = Coll::AllToAll;
    a.nranks = p;
    a.count = 10;
    int lg = 0;
    while ((1 << lg) < p) lg++;
    for (int r = 0; r < p; ++r) {
      a.rank = r;
      size_t sent = 0, bruck_msgs = 0;
      for (const Step& st : build(a, Algo::Pairwise).steps) sent += st.kind == OpKind::Send ? st.count : 0;
      CHECK(sent == static_cast<size_t>(p - 1) * a.count);
      for (const Step& st : build(a, Algo::Bruck).steps) bruck_msgs += st.kind == OpKind::Send;
      CHECK(bruck_msgs == static_cast<size_t>(lg));
    }
    for (Coll c : {Coll::Gather, Coll::Scatter})
      for (int root : {0, p / 2}) {
        CollArgs g = a;
        g.coll = c;
        g.root = g.rank = root;
        size_t direct = 0, tree = 0;
        for (const Step& st : build(g, Algo::Direct).steps) direct += st.peer >= 0;
        for (const Step& st : build(g, Algo::Tree).steps) tree += st.peer >= 0;
        INFO(coll_name(c) << " P=" << p << " root=" << root);
        CHECK(direct == static_cast<size_t>(p - 1));
        // One child per level; the subtree that passes real rank P-1 comes in two pieces.
        CHECK(tree >= static_cast<size_t>(lg));
        CHECK(tree <= static_cast<size_t>(lg) + (root > 0 ? 1 : 0));
      }
  }
}

// A builder of `algo`'s schedules with edit(rank, step) applied to every step.
static std::function<Schedule(const CollArgs&)> edited(Algo algo, std::function<void(const CollArgs&, Step&)> edit) {
  return [algo, edit](const CollArgs& x) {
    Schedule s = build(x, algo);
    for (Step& st : s.steps) edit(x, st);
    return s;
  };
}

TEST_CASE("the checker catches broken schedules of the new collectives") {
  auto fails = [](const VerifyResult& r, const char* needle) {
    INFO(r.error);
    CHECK_FALSE(r.ok);
    CHECK_THAT(r.error, Catch::Contains(needle));
  };
  CollArgs a;
  a.nranks = 6;
  a.count = 5;
  a.chunk = 2;
  a.root = 4;
  // All-to-all: rank 2 skips its own block's copy; and an in-place call built as out of place
  // takes blocks into places that have not been sent yet.
  a.coll = Coll::AllToAll;
  REQUIRE(verify(a, Algo::Pairwise, false).ok);
  auto no_own = [](const CollArgs& x) {
    Schedule s = build(x, Algo::Pairwise);
    if (x.rank == 2) s.steps.erase(s.steps.begin());
    return s;
  };
  fails(verify_with(a, no_own, false), "never written");
  auto as_out_of_place = [](const CollArgs& x) {
    CollArgs y = x;
    y.in_place = false;
    Schedule s = build(y, Algo::Pairwise);
    for (Step& st : s.steps) st.stable_src = false;  // else the verifier stops at the first overwrite
    return s;
  };
  fails(verify_with(a, as_out_of_place, true), "wrong inputs");
  // All-to-all-v: a builder that takes the send blocks as back to back, ignoring sdispls.
  const AllToAllv v{6,
                    4,
                    3,
                    5,
                    false,
                    [](int, bool send) { return send ? Layout::Reversed : Layout::Packed; },
                    [](int) { return false; }};
  REQUIRE(verify_ranks(v, Algo::Pairwise).ok);
  auto packed_sends = [](const CollArgs& x) {
    auto w = std::make_shared<VCounts>(*x.v);
    w->send_displs = displs_for(w->send_counts, Layout::Packed, 0);
    CollArgs y = x;
    y.v = w;
    return build(y, Algo::Pairwise);
  };
  fails(verify_ranks_with(v, packed_sends), "wrong inputs");
  // Gather: the root files block q one place on.
  a.coll = Coll::Gather;
  REQUIRE(verify(a, Algo::Tree, true).ok);
  auto shifted = edited(Algo::Direct, [](const CollArgs& x, Step& st) {
    if (x.rank == x.root && st.kind == OpKind::Recv) st.dst.off = (st.dst.off + x.count) % (x.count * x.nranks);
  });
  fails(verify_with(a, shifted, false), "wrong inputs");
  // Scatter: the root sends rank j the block of j+1.
  a.coll = Coll::Scatter;
  REQUIRE(verify(a, Algo::Tree, false).ok);
  auto off_by_one = edited(Algo::Direct, [](const CollArgs& x, Step& st) {
    if (st.kind == OpKind::Send) st.src.off = (st.src.off + x.count) % (x.count * x.nranks);
  });
  fails(verify_with(a, off_by_one, true), "wrong inputs");
  // All-gather-v: blocks taken as back to back, ignoring displs.
  const std::vector<size_t> counts = {3, 0, 5, 1, 0, 4};
  CollArgs agv = v_args(Coll::AllGatherv, 6, counts, displs_for(counts, Layout::Reversed, 0), 2);
  REQUIRE(verify_ranks(per_rank(agv, false), Algo::Ring).ok);
  auto packed_blocks = [](const CollArgs& x) {
    auto w = std::make_shared<VCounts>(*x.v);
    w->recv_displs = displs_for(w->recv_counts, Layout::Packed, 0);
    CollArgs y = x;
    y.v = w;
    return build(y, Algo::Ring);
  };
  fails(verify_ranks_with(per_rank(agv, false), packed_blocks), "wrong inputs");
  // Reduce-scatter-v: an average whose builder forgot to divide; and one rank that sums a block
  // twice.
  CollArgs rsv = v_args(Coll::ReduceScatterv, 6, counts, {}, 2);
  rsv.op = coralAvg;
  REQUIRE(verify_ranks(per_rank(rsv, true), Algo::Ring).ok);
  auto no_scale = [](const CollArgs& x) {
    CollArgs y = x;
    y.op = coralSum;
    return build(y, Algo::Ring);
  };
  fails(verify_ranks_with(per_rank(rsv, true), no_scale), "averaging");
  rsv.op = coralSum;
  auto twice = [](const CollArgs& x) {
    Schedule s = build(x, Algo::Ring);
    const size_t mine = x.v->recv_counts[3], at = 3 + 0 + 5;  // block 3 of {3, 0, 5, 1, ...}
    if (x.rank == 3) s.steps.push_back(reduce({Buf::Recv, 0}, {Buf::Send, at}, {Buf::Recv, 0}, mine));
    return s;
  };
  fails(verify_ranks_with(per_rank(rsv, false), twice), "7 contributions, expected 6");
  // A schedule that says its buffer is smaller than the call's.
  auto short_recv = [](const CollArgs& x) {
    Schedule s = build(x, Algo::Ring);
    if (x.rank == 1) s.recv_elems -= 1;
    return s;
  };
  fails(verify_ranks_with(per_rank(agv, false), short_recv), "the call needs");
}

TEST_CASE("the new collectives' algorithms: supported, defaults, names") {
  CHECK(default_algo(Coll::AllToAll) == Algo::Pairwise);
  CHECK(default_algo(Coll::AllToAllv) == Algo::Pairwise);
  CHECK(default_algo(Coll::Gather) == Algo::Direct);
  CHECK(default_algo(Coll::Scatter) == Algo::Direct);
  CHECK(default_algo(Coll::AllGatherv) == Algo::Ring);
  CHECK(default_algo(Coll::ReduceScatterv) == Algo::Ring);
  CHECK(supports(Coll::AllToAll, Algo::Bruck));
  CHECK_FALSE(supports(Coll::AllToAllv, Algo::Bruck));
  CHECK(supports(Coll::Gather, Algo::Tree));
  CHECK(supports(Coll::Scatter, Algo::Tree));
  CHECK_FALSE(supports(Coll::AllGatherv, Algo::Rhd));
  for (Algo algo : {Algo::Pairwise, Algo::Bruck, Algo::Direct}) CHECK(parse_algo(algo_name(algo)) == algo);
  CHECK_THROWS_WITH(parse_algo("shuffle"), Catch::Contains("pairwise, bruck"));
  // A v-collective without its counts is the caller's error, not a crash.
  CollArgs a;
  a.coll = Coll::AllGatherv;
  a.nranks = 3;
  CHECK_THROWS_WITH(build(a, Algo::Ring), Catch::Contains("counts"));
}
