// New communicators from an existing one. A split runs over the parent (an all-gather of colors
// and keys) and meets in the parent's store. A shrink cannot count on either: the parent has
// failed, and the dead may include the process serving its store. So every rank binds a socket
// at creation and announces it with a secret of its own; a shrink's survivors meet on the one of
// the lowest surviving rank, which starts serving on it.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>

#include "base/error.h"
#include "base/log.h"
#include "bootstrap/exchange.h"
#include "bootstrap/tcp_store.h"
#include "core/communicator.h"

namespace coral {

Communicator::Rescue::~Rescue() {
  if (!server && listen_fd >= 0) close(listen_fd);  // else the server owns it
}

std::optional<Communicator::SplitPlan> Communicator::plan_split(int color, int key) {
  std::vector<int64_t> mine{color, key}, all(2 * static_cast<size_t>(nranks_));
  {
    // Coral's own exchange, not the user's all-gather: the numbers in later errors stay theirs.
    Override<bool> own(agreeing_, true);
    run(make_call(collectives::Coll::AllGather, mine.data(), all.data(), 2, coralInt64, coralSum, 0));
  }
  const uint64_t seq = split_seq_++;
  // Checked after the exchange, so that every rank fails alike rather than leaving the others
  // waiting in it.
  for (int q = 0; q < nranks_; ++q)
    if (all[2 * q] < 0 && all[2 * q] != CORAL_SPLIT_NOCOLOR)
      fail(coralInvalidArgument, fmt::format("rank {} passed color {}: colors are >= 0, or CORAL_SPLIT_NOCOLOR ({})", q,
                                             all[2 * q], CORAL_SPLIT_NOCOLOR));
  if (color == CORAL_SPLIT_NOCOLOR) return std::nullopt;
  std::vector<int> members;
  for (int q = 0; q < nranks_; ++q)
    if (all[2 * q] == color) members.push_back(q);
  std::stable_sort(members.begin(), members.end(), [&](int a, int b) { return all[2 * a + 1] < all[2 * b + 1]; });
  const int me = static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
  log::info(log::Init, "split {}: color {} key {} -> rank {} of {}", seq, color, key, me, members.size());
  return SplitPlan{fmt::format("{}/s{}c{}", prefix_, seq, color), me, static_cast<int>(members.size())};
}

std::function<std::unique_ptr<Communicator>()> Communicator::child_maker(
    const SplitPlan& plan, std::shared_ptr<bootstrap::CancelToken> cancel) const {
  // By value: a background creation must not need the parent, which its owner may destroy.
  return [store = shared_store_, plan, timeout = timeout_override_, keep = keepalive_, cancel] {
    auto child = std::make_unique<Communicator>(store, plan.prefix, plan.rank, plan.size, timeout, cancel);
    child->keepalive_ = keep;
    return child;
  };
}

namespace {

std::string list_text(const std::vector<int>& ranks) {
  std::string s = "{";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s + "}";
}

// Every survivor compares every other survivor's exclude list with its own.
void agree_exclude(bootstrap::Store& store, const std::string& prefix, int rank, int root,
                   const std::vector<int>& alive, const std::string& exclude, std::chrono::milliseconds timeout) {
  bootstrap::Exchange ex(store, prefix + "/agree", rank, timeout);
  bootstrap::Record mine("shrink record", rank);
  mine.add("exclude", exclude);
  ex.publish("exclude", mine);
  // Every list is read before anyone fails, and the root serves until all have read: a root
  // that failed at once and exited would leave the others without the store.
  std::optional<Error> bad;
  for (int q : alive) {
    if (q == rank) continue;
    try {
      const bootstrap::Record theirs = ex.read("exclude", q, mine.what());
      if (theirs.text("exclude") != mine.text("exclude") && !bad)
        bad.emplace(coralInvalidUsage, fmt::format("ranks passed different exclude lists to coralCommShrink: rank {} "
                                                   "excludes {}, rank {} excludes {}",
                                                   q, theirs.text("exclude"), rank, mine.text("exclude")));
    } catch (const Error& e) {
      if (!bad)
        bad.emplace(e.code(),
                    fmt::format("rank {} did not join the shrink (is it dead too? then exclude it): {}", q, e.what()));
    }
  }
  ex.publish("checked", mine);
  if (root == rank)
    for (int q : alive) {
      if (q == rank) continue;
      try {
        ex.read("checked", q, mine.what());
      } catch (const Error&) {  // gone meanwhile: nothing left to wait for
      }
    }
  if (bad) throw *bad;
}

}  // namespace

std::vector<int> Communicator::failed_ranks() {
  // Polled domains learn of a closed connection only when they read: each reads once first.
  std::vector<transport::Domain*> seen;
  for (transport::Domain* d : host_.domain_of)
    if (d && std::find(seen.begin(), seen.end(), d) == seen.end()) {
      seen.push_back(d);
      d->check_peers();
    }
  std::vector<int> failed;
  for (int q = 0; q < nranks_; ++q)
    if (transport::Domain* d = host_.domain_of[static_cast<size_t>(q)]; q != rank_ && d && !d->peer_failure(q).empty())
      failed.push_back(q);
  return failed;
}

std::function<std::unique_ptr<Communicator>()> Communicator::shrink_maker(
    const std::vector<int>& exclude, std::shared_ptr<bootstrap::CancelToken> cancel) {
  std::vector<int> alive;
  for (int q = 0; q < nranks_; ++q)
    if (!std::binary_search(exclude.begin(), exclude.end(), q)) alive.push_back(q);
  const int root = alive.front(), rank = rank_;
  const uint64_t seq = shrink_seq_++;
  const auto timeout = std::chrono::milliseconds(static_cast<long long>(timeout_s_.load() * 1000));
  const std::string prefix = fmt::format("shrink/{}/{}", prefix_, seq), root_addr = rescue_addrs_[root];
  // By value: a background shrink must not need the parent, which its owner may destroy (or
  // abort) meanwhile; the rescue is shared.
  return [=, rescue = rescue_, secret = rescue_secrets_[root], override = timeout_override_,
          keep = keepalive_]() -> std::unique_ptr<Communicator> {
    if (root == rank) {
      std::lock_guard<std::mutex> lock(rescue->mu);
      if (!rescue->server) {
        rescue->server = std::make_shared<bootstrap::TcpStoreServer>(rescue->listen_fd, rescue->secret, false, timeout);
        log::info(log::Init, "shrink: rank {} serves the survivors' rendezvous at {}", rank, root_addr);
      }
    }
    // The survivors' own store, which the child's splits share: the token (coralCommAbort while
    // the shrink is under way) ends all its use, connecting included.
    auto store = std::make_shared<bootstrap::TcpStore>(net::resolve(root_addr), secret, timeout, cancel);
    const int me = static_cast<int>(std::find(alive.begin(), alive.end(), rank) - alive.begin());
    agree_exclude(*store, prefix, rank, root, alive, list_text(exclude), timeout);
    log::info(log::Init, "shrink {}: excluding {} -> rank {} of {}", seq, list_text(exclude), me, alive.size());
    auto child = std::make_unique<Communicator>(store, prefix, me, static_cast<int>(alive.size()), override);
    // The root's rendezvous serves the child for its whole life (its device links connect later).
    child->keepalive_ = root == rank ? std::shared_ptr<void>(rescue) : keep;
    return child;
  };
}

}  // namespace coral
