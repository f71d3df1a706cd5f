// Chooses the algorithm for one call: a pure function of the call and the tuning parameters.
#pragma once
#include <climits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "collectives/registry.h"
#include "collectives/tuner/cost.h"
#include "collectives/tuner/override.h"

namespace coral::collectives {

struct TuneParams {
  Algo forced = Algo::Auto;     // CORAL_ALGO as one name
  std::vector<SizeRule> rules;  // CORAL_ALGO as size ranges (they win over `forced`)
  size_t small_bytes = 4096;    // CORAL_SMALL_BYTES: latency path up to here
  size_t mid_bytes = 1 << 20;   // log-latency algorithms (rhd, trees) up to here
  int oneshot_max_ranks = 8;    // one-shot's P-1 messages per rank only pay off for few ranks
  // On one host, one-shot also beats two-shot past small_bytes while the vector it posts to its
  // P-1 peers, S(P-1) bytes read in all, stays under this.
  size_t oneshot_read_bytes = 64 << 10;
  bool single_host = false;  // every rank shares memory with every other
  int hosts = 1;             // distinct hosts among the ranks
  // Link classes for the cost model across hosts: defaults for a host's shared memory and a
  // 100 Gb/s-class network (alpha seconds, beta seconds per byte).
  LinkModel intra{1e-6, 1 / 20e9}, inter{5e-6, 1 / 12.5e9};
  int nic_share = 1;    // ranks of a host behind one NIC (see ClusterModel)
  bool trials = false;  // CORAL_TUNE_TRIALS: time the close rivals on first calls (trials.h)
};

// The tuner's defaults on one host past the latency path (small_bytes, one-shot's read bound): rows
// by rank count whose value is a CORAL_ALGO value, read by the parser the user's goes through. Set
// as CORAL_ALGO, a row picks what the defaults pick past the latency path, and its own picks within
// it too (a user's ranges come first). The rows cover every count from 1.
constexpr int kAnyRanks = INT_MAX;
struct RankRow {
  int lo, hi;                   // ranks, both included; hi = kAnyRanks: no bound
  std::string text;             // the CORAL_ALGO value as written in select.cc
  std::vector<SizeRule> rules;  // text parsed
};
const std::vector<RankRow>& default_rows();
const RankRow* default_row(int nranks);  // nullptr where no row has nranks
// The rows as lines "P=<lo>-<hi>: <CORAL_ALGO value>" (the unbounded last one "P=<lo>-: ..."), each
// value printed back from its parsed rules (format_rules): what coral-info shows.
std::string default_rules_text();

// All-to-all takes Bruck's algorithm for blocks of up to kBruckBlockBytes from kBruckMinRanks up.
constexpr size_t kBruckBlockBytes = 256;
constexpr int kBruckMinRanks = 8;
// Gather and scatter take the binomial tree for blocks of up to kTreeBlockBytes from kTreeMinRanks up.
constexpr size_t kTreeBlockBytes = 4096;
constexpr int kTreeMinRanks = 8;

// CORAL_ALGO's answer for this call (a size range first, then the one name), if it has one.
std::optional<Algo> user_choice(const CollArgs& a, const TuneParams& t);
Algo select_algo(const CollArgs& a, const TuneParams& t);
// Across hosts: the alpha-beta price of each all-reduce algorithm the cost model knows (the
// hierarchical one where a host has several ranks), cheapest first.
std::vector<std::pair<double, Algo>> priced_allreduce(const CollArgs& a, const TuneParams& t);

// The pipelining chunk in bytes for algo, at most max_bytes (the transports' largest message).
// Chains take the chunk c that minimises (d + S/c - 1)(alpha + c beta) over d = P - 1 hops:
// c = sqrt(S alpha / ((d - 1) beta)), a power of two from kMinChunk up. Small chunks fill the
// pipeline sooner; each one more costs a message, whose alpha the sender pays too (a software
// transport spends it in the CPU). The other algorithms keep max_bytes (see select.cc).
constexpr size_t kMinChunk = 16 << 10;
size_t select_chunk(const CollArgs& a, Algo algo, const TuneParams& t, size_t max_bytes);

}  // namespace coral::collectives
