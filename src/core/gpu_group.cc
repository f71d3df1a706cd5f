// Stream-ordered point-to-point calls (device buffers, or host buffers with a stream), alone or
// a group's. Run one by one a group's could deadlock (every rank sending right before receiving
// left), and a lone one must meet its peer's on the same links with the same tags whatever path
// the peer's took, so all go as one stream-ordered request through the host's point-to-point
// engine: device sends are copied down to pinned memory, moved together with the receives, and
// device receives copied up, before the caller's stream goes on.
#include <fmt/format.h>

#include "base/error.h"
#include "core/communicator.h"
#include "core/gpu_state.h"
#include "core/p2p.h"
#include "kernels/reduce.h"

namespace coral {

namespace {

size_t bytes_of(const Call& c) { return c.args.count * kernels::dtype_size(c.args.dtype); }
bool sends(const Call& c) { return c.args.coll == collectives::Coll::Send; }

}  // namespace

std::shared_ptr<Request> Communicator::run_group_on_stream(std::vector<Call> calls, void* stream) {
  ensure_gpu();
  size_t out = 0, in = 0;
  for (const Call& c : calls)
    if (c.device) (sends(c) ? out : in) += bytes_of(c);
  // Reserved now, before the stream is parked (gpu_state.h says why).
  gpu_->stage[0].get(std::max<size_t>(out, 1));
  gpu_->stage[2].get(std::max<size_t>(in, 1));
  auto req = std::make_shared<Request>();
  req->group = std::move(calls);
  req->device = true;
  return submit_stream(std::move(req), stream);
}

void Communicator::run_stream_p2p(Request& r) {
  GpuState& g = *gpu_;
  void* s = g.stream.get();
  size_t out = 0, in = 0;
  for (const Call& c : r.group)
    if (c.device) (sends(c) ? out : in) += bytes_of(c);
  auto* host_out = static_cast<std::byte*>(g.stage[0].get(std::max<size_t>(out, 1)));
  auto* host_in = static_cast<std::byte*>(g.stage[2].get(std::max<size_t>(in, 1)));
  std::vector<P2POp> ops;
  size_t o = 0, i = 0;
  for (const Call& c : r.group) {
    P2POp op = p2p_op(sends(c), c.args.root, c.send, c.recv, bytes_of(c));
    if (!c.device) {  // host memory: moved where it is
      ops.push_back(op);
      continue;
    }
    op.buf = op.send ? host_out + o : host_in + i;
    if (op.send && op.bytes) gpu::copy_async(op.buf, c.send, op.bytes, s);
    (op.send ? o : i) += op.bytes;
    ops.push_back(op);
  }
  g.stream.sync();
  P2PEngine engine(rank_, host_.links, settings_.chunk_bytes, p2p_seq_send_, p2p_seq_recv_);
  // On the flight board as the host's batches are, so that a timed-out peer's message says
  // what this rank is doing, not that it has started nothing.
  flight_->start(kFlightBatch, ++batch_seq_, ops.size(), 1);
  engine.add(std::move(ops));
  bool published = false;
  try {
    published = drive(engine, [] {});
    end_flight(coralSuccess, published, "");
  } catch (const Error& e) {
    const std::string msg = fmt::format("rank {}: {}", rank_, e.what());
    record_failure(e.code(), msg);
    end_flight(e.code(), published, msg);
    fail(e.code(), msg);
  }
  i = 0;
  for (const Call& c : r.group) {
    if (sends(c) || !c.device) continue;
    if (const size_t n = bytes_of(c)) gpu::copy_async(c.recv, host_in + i, n, s);
    i += bytes_of(c);
  }
  g.stream.sync();
}

}  // namespace coral
