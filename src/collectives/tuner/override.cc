#include "collectives/tuner/override.h"

#include <fmt/format.h>

#include <limits>
#include <numeric>
#include <utility>

#include "base/config.h"
#include "base/error.h"
#include "kernels/reduce.h"

namespace coral::collectives {
namespace {

[[noreturn]] void bad(const std::string& text, const std::string& what) {
  fail(coralInvalidArgument, fmt::format("CORAL_ALGO '{}': {}", text, what));
}

size_t parse_size(const std::string& text, const std::string& s) {
  try {
    return config::parse_bytes(s);
  } catch (const std::exception&) {
    bad(text, fmt::format("'{}' is not a size (bytes, with K, M or G)", s));
  }
}

// The collectives with a choice of algorithm, or one a rule may still name (all-to-all-v,
// all-gather-v and reduce-scatter-v have one each today).
constexpr Coll kRuled[] = {Coll::AllReduce, Coll::ReduceScatter, Coll::AllGather,     Coll::Broadcast,
                           Coll::Reduce,    Coll::AllToAll,      Coll::AllToAllv,     Coll::Gather,
                           Coll::Scatter,   Coll::AllGatherv,    Coll::ReduceScatterv};

Coll parse_coll(const std::string& text, const std::string& s) {
  std::string names;
  for (Coll c : kRuled) {
    if (s == coll_name(c)) return c;
    names += fmt::format("{}{}", names.empty() ? "" : ", ", coll_name(c));
  }
  bad(text, fmt::format("unknown collective '{}' ({})", s, names));
}

std::string size_text(size_t b) {
  for (auto [unit, suffix] : {std::pair<size_t, const char*>{1ull << 30, "G"}, {1u << 20, "M"}, {1u << 10, "K"}})
    if (b >= unit && b % unit == 0) return std::to_string(b / unit) + suffix;
  return std::to_string(b);
}

Algo algo_of(const std::string& text, const std::string& name) {
  try {
    return parse_algo(name);
  } catch (const Error& e) {
    bad(text, e.what());
  }
}

}  // namespace

Overrides parse_overrides(const std::string& text) {
  Overrides o;
  if (text.find(':') == std::string::npos) {
    o.all = algo_of(text, text);
    return o;
  }
  for (const std::string& part : config::split(text, ';')) {
    size_t colon = part.find(':');
    if (colon == std::string::npos) bad(text, fmt::format("'{}' should be collective:range:algorithm,...", part));
    Coll coll = parse_coll(text, part.substr(0, colon));
    for (const std::string& item : config::split(part.substr(colon + 1), ',')) {
      size_t c2 = item.rfind(':'), dash = item.find('-');
      if (c2 == std::string::npos || dash == std::string::npos || dash > c2)
        bad(text, fmt::format("'{}' should be lo-hi:algorithm (hi may be empty)", item));
      size_t lo = parse_size(text, item.substr(0, dash));
      std::string his = item.substr(dash + 1, c2 - dash - 1);
      size_t hi = his.empty() ? std::numeric_limits<size_t>::max() : parse_size(text, his);
      if (hi <= lo) bad(text, fmt::format("empty range '{}'", item.substr(0, c2)));
      Algo algo = algo_of(text, item.substr(c2 + 1));
      if (algo == Algo::Auto || !supports(coll, algo))
        bad(text, fmt::format("{} has no algorithm '{}'", coll_name(coll), algo_name(algo)));
      for (const SizeRule& r : o.rules)
        if (r.coll == coll && lo < r.hi && r.lo < hi)
          bad(text, fmt::format("range '{}' of {} overlaps another", item.substr(0, c2), coll_name(coll)));
      o.rules.push_back({coll, lo, hi, algo});
    }
  }
  return o;
}

std::string format_rules(const std::vector<SizeRule>& rules) {
  std::string out;
  std::vector<bool> done(rules.size(), false);
  // Grouped by collective in the order each first appears: one "coll:" part per collective.
  for (size_t i = 0; i < rules.size(); ++i) {
    if (done[i]) continue;
    out += fmt::format("{}{}:", out.empty() ? "" : ";", coll_name(rules[i].coll));
    const char* sep = "";
    for (size_t j = i; j < rules.size(); ++j) {
      const SizeRule& r = rules[j];
      if (done[j] || r.coll != rules[i].coll) continue;
      done[j] = true;
      const std::string hi = r.hi == std::numeric_limits<size_t>::max() ? "" : size_text(r.hi);
      out += fmt::format("{}{}-{}:{}", sep, size_text(r.lo), hi, algo_name(r.algo));
      sep = ",";
    }
  }
  return out;
}

std::string format_overrides(const Overrides& o) { return o.rules.empty() ? algo_name(o.all) : format_rules(o.rules); }

size_t message_bytes(const CollArgs& a) {
  const size_t es = kernels::dtype_size(a.dtype), b = a.count * es;
  switch (a.coll) {
    case Coll::ReduceScatter:
    case Coll::AllGather:
    case Coll::AllToAll:
    case Coll::Gather:  // the root's buffer
    case Coll::Scatter:
      return b * static_cast<size_t>(a.nranks);
    case Coll::AllGatherv:
    case Coll::ReduceScatterv:
      // The counts are the same everywhere, so every rank sees the same size and picks alike.
      if (a.v) return std::accumulate(a.v->recv_counts.begin(), a.v->recv_counts.end(), size_t{0}) * es;
      return b * static_cast<size_t>(a.nranks);
    default:
      // All-to-all-v: this rank's receive (a.count), which differs by rank; with one algorithm
      // there is nothing for the ranks to disagree on.
      return b;
  }
}

}  // namespace coral::collectives
