#include "collectives/tuner/select.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "kernels/reduce.h"

namespace coral::collectives {
namespace {

// The one-host rows (default_rows). The latency path stays in code ahead of them: small_bytes is a
// user's knob shared with the cross-host path, and one-shot's bound S(P-1) <= oneshot_read_bytes is
// inclusive and a formula in P, which rows could only copy per P in odd byte counts that would no
// longer follow the parameter. Powers of two get rows of their own rather than a test in code, so
// that a row alone says what runs: copied into CORAL_ALGO it picks the same past the latency path.
struct Row {
  int lo, hi;
  const char* text;
};
constexpr Row kOneHost[] = {
    // Every pair is equally close over shared memory: two-shot moves the ring's bytes with 2 rounds
    // of waiting instead of 2(P-1).
    {1, 3, "allreduce:0-:twoshot"},
    // From 256 KiB rhd's pairwise halves stay in cache while the vector fits the last-level cache.
    {4, 4, "allreduce:0-256K:twoshot,256K-32M:rhd,32M-:twoshot"},
    // Above 4 ranks rhd leads below 128 KiB where P is a power of two (elsewhere its folding costs a
    // whole extra vector). The ring takes over from max(128 KiB, 256 P^3) bytes, its 2(P-1) waits
    // costing more the more ranks share a core; per row rounded up to a power of two, so that sizes
    // of a power of two pick as that formula does.
    {5, 7, "allreduce:0-128K:twoshot,128K-:ring"},
    {8, 8, "allreduce:0-128K:rhd,128K-:ring"},
    {9, 10, "allreduce:0-256K:twoshot,256K-:ring"},
    {11, 12, "allreduce:0-512K:twoshot,512K-:ring"},
    {13, 15, "allreduce:0-1M:twoshot,1M-:ring"},
    {16, 16, "allreduce:0-128K:rhd,128K-1M:twoshot,1M-:ring"},
    {17, 20, "allreduce:0-2M:twoshot,2M-:ring"},
    {21, 25, "allreduce:0-4M:twoshot,4M-:ring"},
    {26, 31, "allreduce:0-8M:twoshot,8M-:ring"},
    {32, 32, "allreduce:0-128K:rhd,128K-8M:twoshot,8M-:ring"},
    {33, 40, "allreduce:0-16M:twoshot,16M-:ring"},
    {41, 50, "allreduce:0-32M:twoshot,32M-:ring"},
    {51, 63, "allreduce:0-64M:twoshot,64M-:ring"},
    {64, 64, "allreduce:0-128K:rhd,128K-64M:twoshot,64M-:ring"},
    {65, 80, "allreduce:0-128M:twoshot,128M-:ring"},
    {81, 101, "allreduce:0-256M:twoshot,256M-:ring"},
    {102, 127, "allreduce:0-512M:twoshot,512M-:ring"},
    {128, 128, "allreduce:0-128K:rhd,128K-512M:twoshot,512M-:ring"},
    {129, 161, "allreduce:0-1G:twoshot,1G-:ring"},
    // From here the ring's crossover lies past 1 GiB.
    {162, kAnyRanks, "allreduce:0-:twoshot"},
};

std::vector<RankRow> parse_rows() {
  std::vector<RankRow> rows;
  for (const Row& r : kOneHost) rows.push_back({r.lo, r.hi, r.text, parse_overrides(r.text).rules});
  return rows;
}

std::optional<Algo> match(const std::vector<SizeRule>& rules, const CollArgs& a) {
  const size_t bytes = message_bytes(a);
  for (const SizeRule& r : rules)
    if (r.coll == a.coll && bytes >= r.lo && bytes < r.hi) return r.algo;
  return std::nullopt;
}

}  // namespace

const std::vector<RankRow>& default_rows() {
  static const std::vector<RankRow> rows = parse_rows();
  return rows;
}

const RankRow* default_row(int nranks) {
  for (const RankRow& r : default_rows())
    if (nranks >= r.lo && nranks <= r.hi) return &r;
  return nullptr;
}

std::string default_rules_text() {
  std::string out;
  for (const RankRow& r : default_rows())
    out += fmt::format("P={}-{}: {}\n", r.lo, r.hi == kAnyRanks ? "" : std::to_string(r.hi), format_rules(r.rules));
  return out;
}

std::optional<Algo> user_choice(const CollArgs& a, const TuneParams& t) {
  if (std::optional<Algo> rule = match(t.rules, a)) return rule;
  if (t.forced != Algo::Auto && supports(a.coll, t.forced)) return t.forced;
  return std::nullopt;
}

std::vector<std::pair<double, Algo>> priced_allreduce(const CollArgs& a, const TuneParams& t) {
  ClusterModel m{a.nranks, std::max(1, a.nranks / std::max(1, t.hosts)), t.intra, t.inter, t.nic_share};
  const double s = static_cast<double>(a.count * kernels::dtype_size(a.dtype));
  std::vector<std::pair<double, Algo>> priced{
      {cost_rd(m, s), Algo::RecursiveDoubling}, {cost_rhd(m, s), Algo::Rhd}, {cost_ring(m, s), Algo::Ring}};
  if (a.nranks > t.hosts) priced.emplace_back(cost_hier(m, s), Algo::Hier);
  std::sort(priced.begin(), priced.end());
  return priced;
}

Algo select_algo(const CollArgs& a, const TuneParams& t) {
  if (std::optional<Algo> user = user_choice(a, t)) return *user;
  const size_t bytes = message_bytes(a);
  if (a.coll == Coll::AllReduce) {
    // Small messages are latency-bound: one-shot waits once (for all peers at the same time),
    // recursive doubling log2(P) times, the ring 2(P-1) times; their extra bytes (S(P-1) and
    // S log P against 2S) stop paying above a few KiB.
    const bool oneshot = t.single_host && a.nranks <= t.oneshot_max_ranks;
    if (bytes <= t.small_bytes) return oneshot ? Algo::OneShot : Algo::RecursiveDoubling;
    // Posted once and read in place by every peer, the vector costs one-shot less than two-shot's
    // second round of waiting until the peers' reads add up.
    if (oneshot && bytes * static_cast<size_t>(a.nranks - 1) <= t.oneshot_read_bytes) return Algo::OneShot;
  }
  if (t.single_host)
    if (const RankRow* row = default_row(a.nranks))
      if (std::optional<Algo> pick = match(row->rules, a)) return *pick;
  // Across hosts the link classes differ: the cost model's cheapest.
  if (a.coll == Coll::AllReduce) return priced_allreduce(a, t).front().second;
  if (a.coll == Coll::Broadcast || a.coll == Coll::Reduce) {
    // Binomial trees: log P hops against the chain's P-1; the chain's pipeline wins large ones.
    return bytes <= t.mid_bytes ? Algo::Tree : Algo::Chain;
  }
  const size_t block = a.count * kernels::dtype_size(a.dtype);
  if (a.coll == Coll::Gather || a.coll == Coll::Scatter) {
    // The root moves P blocks either way; the tree cuts its messages from P-1 to log2 P but adds
    // a store-and-forward hop per level, which stops paying once bytes, not messages, set the
    // time. The simulator, whose messages cost their sender alpha, puts the scatter's crossover
    // past 4 KiB blocks from 8 ranks (tests/unit/test_tuner_coll.cc). It charges receivers nothing
    // per message, so it cannot see the gather's gain, the same one at the root's other end.
    return a.nranks >= kTreeMinRanks && block <= kTreeBlockBytes ? Algo::Tree : Algo::Direct;
  }
  if (a.coll == Coll::AllToAll) {
    // Bruck waits log2 P times against P-1 but sends (P/2) log2 P blocks against P-1 and copies
    // each about three times: MPICH's crossover, 256-byte blocks from 8 ranks up, well inside
    // where the alpha-beta model has it win (tests/unit/test_tuner_coll.cc).
    return a.nranks >= kBruckMinRanks && block <= kBruckBlockBytes ? Algo::Bruck : Algo::Pairwise;
  }
  return default_algo(a.coll);
}

size_t select_chunk(const CollArgs& a, Algo algo, const TuneParams& t, size_t max_bytes) {
  // Only the chains are pipelines whose depth small chunks hide. A binomial tree's root sends
  // every chunk to log2 P children, so its port, not the depth, sets the pace. The double binary
  // tree runs both directions in one step order, so each chunk waits about a round trip through
  // the tree: more chunks, more round trips (the simulator agrees: tests/unit/test_tuner.cc).
  const int d = algo == Algo::Chain ? a.nranks - 1 : 0;
  if (d < 2 || max_bytes <= kMinChunk) return max_bytes;
  const LinkModel& l = t.single_host || t.hosts <= 1 ? t.intra : t.inter;
  const double s = static_cast<double>(message_bytes(a));
  const double best = std::sqrt(s * l.alpha / ((d - 1) * l.beta));
  size_t c = kMinChunk;
  while (c < max_bytes && static_cast<double>(c) * 1.5 < best) c *= 2;
  return std::min(c, max_bytes);
}

}  // namespace coral::collectives
