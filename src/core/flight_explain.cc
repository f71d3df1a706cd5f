// The text of a timed-out wait: follow who waits on whom from the awaited rank to the one that
// is stuck (not waiting on anyone: stopped, or busy outside Coral) or behind (done with an
// earlier operation and not yet in ours), so that every rank's error names the same culprit.
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "core/flight.h"

namespace coral {

namespace {

bool is_p2p(uint32_t kind) {
  const auto c = static_cast<collectives::Coll>(kind & 0xff);
  return (kind & kFlightBatch) || c == collectives::Coll::Send || c == collectives::Coll::Recv;
}

// "rank 3, which last started allreduce #12 and is in step 4 of it"
std::string doing(int r, const FlightStatus& s) {
  std::string t = fmt::format("rank {}", r);
  if (!s.known)
    return t +
           ", whose state is unknown (on another host, and not waiting in Coral: stopped, busy "
           "outside Coral, or its host is unreachable)";
  if (s.number == 0) return t + ", which has not started any operation on this communicator";
  const std::string cur = op_label(s.kind, s.number);
  if (s.state == 1) return t + fmt::format(", which last started {} and is in step {} of it", cur, s.step + 1);
  return t +
         fmt::format(", which last {} {} and has started nothing since", s.state == 3 ? "failed in" : "completed", cur);
}

}  // namespace

std::string disagreement(const FlightStatus& mine, int peer, const FlightStatus& theirs) {
  if (!theirs.known || theirs.state != 2 || mine.state != 1 || theirs.number != mine.number ||
      !completes_collective(mine.kind) || !completes_collective(theirs.kind))
    return "";
  constexpr uint32_t kCall = 0xffffff;  // collective, datatype and op, not the algorithm picked
  const auto c = static_cast<collectives::Coll>(mine.kind & 0xff);
  // A v-collective's count is each rank's own.
  const bool own_counts =
      c == collectives::Coll::AllGatherv || c == collectives::Coll::ReduceScatterv || c == collectives::Coll::AllToAllv;
  const bool same_call = (mine.kind & kCall) == (theirs.kind & kCall);
  if (same_call && (own_counts || mine.count == theirs.count)) return "";
  return fmt::format("rank {} completed {} while this rank runs {}: the ranks passed different {}", peer,
                     op_call(theirs), op_call(mine),
                     same_call ? fmt::format("counts ({} and {} elements)", theirs.count, mine.count)
                               : "collectives, datatypes or ops");
}

std::string explain_wait(int me, const FlightStatus& mine, int peer, double waited_s, const BoardReader& board) {
  std::string text = fmt::format("waited {:g} s for ", waited_s);
  std::vector<int> seen{me};
  int r = peer;
  for (size_t hop = 0; hop < 64; ++hop) {
    const FlightStatus s = board(r);
    seen.push_back(r);
    if (hop > 0) text += "; ";
    text += doing(r, s);
    if (!s.known) break;
    if (hop == 0) {
      const std::string d = disagreement(mine, r, s);
      if (!d.empty()) {
        text += ": " + d;
        break;
      }
    }
    if (s.stopped) {
      text += fmt::format(": rank {} is stopped (SIGSTOP, or a debugger holds it)", r);
      break;
    }
    // Done with an earlier collective and not in ours: this rank is behind.
    const bool collective = completes_collective(mine.kind) && !is_p2p(s.kind);
    if (collective && s.state != 1 && s.number < mine.number) {
      text += fmt::format(
          ": rank {} is behind (it has not called {} yet; it called fewer collectives, or is busy "
          "outside Coral)",
          r, op_label(mine.kind, mine.number));
      break;
    }
    if (collective && s.state == 1 && s.number < mine.number && !s.waiting) {
      text += fmt::format(": rank {} is behind, and not waiting on any rank (stopped, or busy outside Coral)", r);
      break;
    }
    if (!s.waiting) {
      if (s.state == 1) text += ", waiting on no rank (stopped, or busy outside Coral)";
      break;
    }
    const int next = s.waiting_on;
    text += fmt::format(", {} rank {}", s.state == 3 ? "having waited for" : "waiting for", next);
    // Waits run a slice every few ms: one that has been quiet for a second is not running.
    if (s.quiet_ms > 1000) {
      text += fmt::format(", but has not run for {:.1f} s: rank {} is stopped, or starved of CPU", s.quiet_ms / 1e3, r);
      break;
    }
    if (std::find(seen.begin(), seen.end(), next) != seen.end()) {
      std::string cycle;
      for (size_t i = std::find(seen.begin(), seen.end(), next) - seen.begin(); i < seen.size(); ++i)
        cycle += fmt::format("rank {} -> ", seen[i]);
      // Between sends and receives the usual cause is each rank sending before it receives.
      text += fmt::format(": a cycle of waits ({}rank {}): {}", cycle, next,
                          is_p2p(mine.kind) && is_p2p(s.kind)
                              ? "each waits for a match the other has not posted (sending before receiving on "
                                "both sides? put the sends and receives in one group)"
                              : "the ranks called different operations");
      break;
    }
    r = next;
  }
  return text;
}

}  // namespace coral
