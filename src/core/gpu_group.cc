// Stream-ordered point-to-point calls (device buffers, or host buffers with a stream), alone or
// a group's. Run one by one a group's could deadlock (every rank sending right before receiving
// left), and a lone one must meet its peer's on the same links with the same tags whatever path
// the peer's took, so all go through the host's point-to-point engine: device sends are copied
// down to pinned memory, moved together with the receives, and device receives copied up,
// before the caller's stream goes on.
//
// Like the host's requests (batch.cc), the stream-ordered ones queued behind a running one are
// adopted into its engine, so each rank sending before it receives, with no group, completes
// (where NCCL would hang). A request's buffers are its stream's until its ready event fires,
// which on one stream is only after the requests before it are done. So its receives land in
// staging at once, its sends go once it is ready, and the requests complete (copies up, flag
// raised, caller told) strictly in order. While the oldest waits for its stream no timeout
// runs: no peer is late.
#include <fmt/format.h>

#include <time.h>

#include <cstring>
#include <deque>

#include "base/error.h"
#include "core/communicator.h"
#include "core/gpu_state.h"
#include "core/p2p.h"
#include "kernels/reduce.h"

namespace coral {

namespace {

constexpr size_t kNone = ~size_t{0};

size_t bytes_of(const Call& c) { return c.args.count * kernels::dtype_size(c.args.dtype); }
bool sends(const Call& c) { return c.args.coll == collectives::Coll::Send; }

// A stream-ordered point-to-point request, which a running one may adopt.
bool stream_p2p(const Request& r) { return r.ready && !r.group.empty(); }

// Where a request's device sends, then its device receives, sit in its pinned staging.
size_t device_send_bytes(const Request& r) {
  size_t out = 0;
  for (const Call& c : r.group)
    if (c.device && sends(c)) out += bytes_of(c);
  return out;
}

// One request in the running engine.
struct InFlight {
  Request* req;
  std::shared_ptr<Request> adopted;  // null for the request being run (run_queued holds it)
  size_t recv_id = kNone;            // engine ids of its receives and of its sends
  size_t send_id = kNone;
  std::vector<std::byte> host_in;   // its host receives land here first
  std::vector<std::byte*> landing;  // per receive, in call order: where it lands
};

}  // namespace

std::shared_ptr<Request> Communicator::run_group_on_stream(std::vector<Call> calls, void* stream) {
  ensure_gpu();
  size_t bytes = 0;
  for (const Call& c : calls)
    if (c.device) bytes += bytes_of(c);
  auto req = std::make_shared<Request>();
  req->staging = gpu_->p2p_stages->take(bytes);  // now, before the stream is parked (gpu_state.h)
  req->group = std::move(calls);
  req->device = true;
  return submit_stream(std::move(req), stream);
}

void Communicator::run_stream_p2p(Request& r) {
  GpuState& g = *gpu_;
  void* s = g.stream.get();
  P2PEngine engine(rank_, host_.links, settings_.chunk_bytes, p2p_seq_send_, p2p_seq_recv_);
  std::deque<InFlight> flying;  // in queue order; the front is the oldest not yet complete
  bool published = false;       // a wait published this rank's status (end_flight)

  // Receives go at once, each request's buffers being its stream's until it is ready: device
  // ones into its pinned staging, host ones into host_in.
  auto post_receives = [&](InFlight& f) {
    std::byte* dev_in = f.req->staging.get() + device_send_bytes(*f.req);
    size_t host_bytes = 0;
    for (const Call& c : f.req->group)
      if (!sends(c) && !c.device) host_bytes += bytes_of(c);
    f.host_in.resize(host_bytes);
    std::vector<P2POp> ops;
    size_t d = 0, h = 0;
    for (const Call& c : f.req->group) {
      if (sends(c)) continue;
      P2POp op = p2p_op(false, c.args.root, nullptr, c.recv, bytes_of(c));
      if (c.device)
        op.buf = dev_in + d, d += op.bytes;
      else
        op.buf = f.host_in.data() + h, h += op.bytes;
      f.landing.push_back(op.buf);
      ops.push_back(op);
    }
    f.recv_id = engine.add(std::move(ops));
  };
  // Sends, once the request's ready event has fired: device ones copied down first.
  auto post_sends = [&](InFlight& f) {
    std::vector<P2POp> ops;
    size_t o = 0;
    for (const Call& c : f.req->group) {
      if (!sends(c)) continue;
      P2POp op = p2p_op(true, c.args.root, c.send, nullptr, bytes_of(c));
      if (c.device) {
        op.buf = f.req->staging.get() + o;
        if (op.bytes) gpu::copy_async(op.buf, c.send, op.bytes, s);
        o += op.bytes;
      }
      ops.push_back(op);
    }
    if (o) g.stream.sync(gpu_limit());
    f.send_id = engine.add(std::move(ops));
  };
  // All its messages moved: receives copied to their buffers, then the caller's stream released
  // and the caller told (a caller waiting on the host must not wait for the requests after).
  auto complete = [&](InFlight& f) {
    bool copied_up = false;
    size_t k = 0;
    for (const Call& c : f.req->group) {
      if (sends(c)) continue;
      if (const size_t n = bytes_of(c); n && c.device) {
        gpu::copy_async(c.recv, f.landing[k], n, s);
        copied_up = true;
      } else if (n) {
        std::memcpy(c.recv, f.landing[k], n);
      }
      ++k;
    }
    if (copied_up) g.stream.sync(gpu_limit());
    g.flag.set(f.req->seq);
    f.req->finish(coralSuccess, "");
    if (f.adopted) queue_.adopted_done();
  };
  auto done = [&](const InFlight& f) {
    return f.send_id != kNone && engine.owner_done(f.recv_id) && engine.owner_done(f.send_id);
  };
  // Adopts, posts the sends that became ready, completes what is done. True while the oldest
  // request waits for its own stream (then no peer is late).
  auto between = [&] {
    while (std::shared_ptr<Request> next = queue_.take_front_if(stream_p2p)) {
      flying.push_back({next.get(), next, kNone, kNone, {}, {}});
      post_receives(flying.back());
    }
    // Sends keep their order: a request's go after those of every request before it.
    for (InFlight& f : flying) {
      if (f.send_id != kNone) continue;
      if (!f.req->ready->query()) break;
      post_sends(f);
    }
    while (!flying.empty() && done(flying.front())) {
      complete(flying.front());
      flying.pop_front();
    }
    return !flying.empty() && flying.front().send_id == kNone;
  };
  // Every request not yet complete fails with the run, and no caller's stream stays parked.
  auto abandon = [&](coralResult_t rc, std::string msg) {
    if (failed_.load() == coralSuccess) {  // else it was recorded (an abort), named
      msg = fmt::format("rank {}: {}", rank_, msg);
      record_failure(rc, msg);
    }
    end_flight(rc, published, msg);
    for (InFlight& f : flying) {
      g.flag.set(f.req->seq);
      f.req->finish(rc, msg);
      if (f.adopted) queue_.adopted_done();
    }
    flying.clear();
    fail(rc, msg);
  };

  // On the flight board as the host's batches are, so that a timed-out peer's message says
  // what this rank is doing, not that it has started nothing.
  flight_->start(kFlightBatch, ++batch_seq_, r.group.size(), 1);
  try {
    flying.push_back({&r, nullptr, kNone, kNone, {}, {}});
    post_receives(flying.back());
    while (true) {
      published = drive(engine, between) || published;
      between();
      if (flying.empty()) break;
      // Nothing left to move: the oldest request waits for its stream to reach it. Keep
      // adopting meanwhile: a receive queued behind it may be what a peer's send waits for.
      timespec pause{0, 20 * 1000};
      while (engine.all_done() && !flying.front().req->ready->query()) {
        nanosleep(&pause, nullptr);
        between();
        check_usable();  // aborted meanwhile (coralCommAbort on another thread)
      }
    }
    end_flight(coralSuccess, published, "");
  } catch (const Error& e) {
    abandon(e.code(), e.what());
  } catch (const std::exception& e) {
    abandon(coralInternalError, e.what());  // tags were drawn for messages that never went
  }
}

}  // namespace coral
