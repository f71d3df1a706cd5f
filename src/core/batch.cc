// Groups and point-to-point requests on the progress thread. A point-to-point request may need
// its peer to post a matching call first (a send before the peer's receive), so it is never run
// alone to completion: the engine moves all of them at once, adopting those queued behind it.
#include <fmt/format.h>
#include <immintrin.h>
#include <time.h>

#include <chrono>
#include <optional>

#include "base/error.h"
#include "base/log.h"
#include "core/communicator.h"
#include "core/p2p.h"

namespace coral {

namespace {

using Clock = std::chrono::steady_clock;

// A request the running engine may take over: host point-to-point calls only.
bool p2p_only(const Request& r) {
  if (r.ready) return false;  // stream-ordered
  if (r.group.empty()) return is_p2p(r.call);
  for (const Call& c : r.group)
    if (!is_p2p(c)) return false;
  return true;
}

std::vector<P2POp> p2p_ops(Request& r) {
  std::vector<P2POp> ops;
  auto add = [&](const Call& c) {
    if (!is_p2p(c)) return;
    ops.push_back(p2p_op(c.args.coll == collectives::Coll::Send, c.args.root, c.send, c.recv,
                         c.args.count * kernels::dtype_size(c.args.dtype)));
  };
  if (r.group.empty())
    add(r.call);
  else
    for (const Call& c : r.group) add(c);
  return ops;
}

}  // namespace

std::shared_ptr<Request> Communicator::submit_group(std::vector<Call> calls) {
  auto req = std::make_shared<Request>();
  req->group = std::move(calls);
  req->callers_waiting = &callers_waiting_;
  queue_.submit(req);
  return req;
}

bool Communicator::drive(P2PEngine& engine, const std::function<bool()>& between) {
  // A new monitor after each move: the timeout counts how long nothing moved.
  std::optional<PeerMonitor> mon;
  bool published = false;
  auto fresh = [&] {
    published = published || (mon && mon->published());
    mon.emplace(rank_, host_.domain_of.data(), host_.polled, timeout_s_.load(), 0, 0, host_.cpu_gate, flight_peers_);
  };
  fresh();
  int idle = 0;
  auto moved = Clock::now();
  const auto limit = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s_.load()));
  while (true) {
    const bool own_stream = between();
    if (engine.all_done()) break;
    if (engine.progress(*mon)) {
      idle = 0;
      fresh();
      moved = Clock::now();
      continue;
    }
    mon->poll_others(nullptr);  // network transports move only when polled
    if (++idle < 64) {
      _mm_pause();
    } else if (idle < 256) {
      sched_yield();
    } else {
      timespec ts{0, 50 * 1000};
      nanosleep(&ts, nullptr);
      // Waiting for this rank's own stream to reach a request: no peer is late, so no clock runs.
      if (own_stream) {
        fresh();
        moved = Clock::now();
      }
      for (int peer : engine.waiting_on()) mon->check(peer);
      check_usable();  // aborted meanwhile (coralCommAbort on another thread)
      // A send to this rank itself without its receive (or the reverse) has no peer to check.
      if ((idle & 1023) == 0 && Clock::now() - moved > limit)
        fail(coralTimeout,
             fmt::format("point-to-point: rank {} waited {} s with nothing moving (CORAL_TIMEOUT or timeoutSeconds); "
                         "a send to or receive from this rank itself without its match?",
                         rank_, timeout_s_.load()));
    }
  }
  for (auto& d : host_.domains) d->drain(*mon);
  return published || mon->published();
}

void Communicator::run_batch(std::shared_ptr<Request>& first) {
  std::vector<std::shared_ptr<Request>> owners;  // by engine id; null once finished
  std::vector<bool> adopted;
  std::lock_guard<std::mutex> lock(exec_mu_);
  P2PEngine engine(rank_, host_.links, settings_.chunk_bytes, p2p_seq_send_, p2p_seq_recv_);
  auto finish = [&](size_t id, coralResult_t rc, const std::string& err) {
    if (!owners[id]) return;
    owners[id]->finish(rc, err);
    owners[id].reset();
    if (adopted[id]) queue_.adopted_done();
  };
  owners.push_back(first);
  adopted.push_back(false);
  bool published = false;
  try {
    check_usable();
    if (!first->group.empty())
      for (Call& c : first->group)
        if (!is_p2p(c)) execute(c, true);
    const auto ops = p2p_ops(*first);
    flight_->start(kFlightBatch, ++batch_seq_, ops.size(), 1);
    engine.add(ops);
    size_t open = 0;  // owners before it are all finished: a long-lived batch stays cheap
    published = drive(engine, [&] {
      for (size_t id = open; id < owners.size(); ++id)
        if (owners[id] && engine.owner_done(id)) finish(id, coralSuccess, "");
      while (open < owners.size() && !owners[open]) ++open;
      while (std::shared_ptr<Request> next = queue_.take_front_if(p2p_only)) {
        owners.push_back(std::move(next));
        adopted.push_back(true);
        engine.add(p2p_ops(*owners.back()));
      }
      return false;
    });
    end_flight(coralSuccess, published, "");
    for (size_t id = 0; id < owners.size(); ++id) finish(id, coralSuccess, "");
  } catch (const Error& e) {
    std::string msg = e.what();
    if (failed_.load() == coralSuccess) {  // else execute() recorded it, named
      msg = fmt::format("rank {}: {}", rank_, e.what());
      record_failure(e.code(), msg);
    }
    end_flight(e.code(), published, msg);
    for (size_t id = 0; id < owners.size(); ++id) finish(id, e.code(), msg);
  } catch (const std::exception& e) {
    // Tags were drawn for messages that never went: later ones would not match.
    const std::string msg = fmt::format("rank {}: {}", rank_, e.what());
    record_failure(coralInternalError, msg);
    for (size_t id = 0; id < owners.size(); ++id) finish(id, coralInternalError, msg);
  }
}

}  // namespace coral
