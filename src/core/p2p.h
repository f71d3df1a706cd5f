// The point-to-point engine: the sends and receives of any number of requests progress together,
// each moved a message at a time whenever its link is ready, so no order of posting can deadlock
// (every rank sends right and receives left in one group; a send posted before the peer's
// receive). Messages of one (peer, direction) keep their posting order, as MPI and NCCL match
// them; messages to this rank itself pair its sends with its receives in order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/wait.h"
#include "transport/transport.h"

namespace coral {

// One side of one message: this rank sends bytes at buf to peer, or receives them from it.
struct P2POp {
  bool send = false;
  int peer = -1;
  std::byte* buf = nullptr;
  size_t bytes = 0;
  uint64_t tag = 0;  // set by the engine: the same on both sides of a message
  size_t owner = 0;  // the request it belongs to (P2PEngine::add's id)
  size_t done = 0;   // bytes moved so far
  bool started = false;
  bool finished = false;
};

// The op a Send or Recv call makes, on the call's own buffer.
inline P2POp p2p_op(bool send, int peer, const void* send_buf, void* recv_buf, size_t bytes) {
  P2POp op;
  op.send = send;
  op.peer = peer;
  op.buf = static_cast<std::byte*>(send ? const_cast<void*>(send_buf) : recv_buf);
  op.bytes = bytes;
  return op;
}

class P2PEngine {
 public:
  // links: by rank; chunk: a cap on a message's bytes (0: none), the same on every rank, as
  // sender and receiver must cut a message alike.
  P2PEngine(int rank, const std::vector<transport::Link*>& links, size_t chunk, std::vector<uint64_t>& send_seq,
            std::vector<uint64_t>& recv_seq);
  // Adds a request's operations; returns its id. Tags are drawn here, in posting order.
  size_t add(std::vector<P2POp> ops);
  // Moves every operation that can move without waiting; true if anything moved. Throws
  // coral::Error on a mismatched message (its size or tag).
  bool progress(WaitMonitor& mon);
  bool owner_done(size_t id) const { return left_[id] == 0; }
  bool all_done() const { return active_ == 0; }
  // A peer some unfinished operation waits for (for failure checks), -1 if none or only self.
  std::vector<int> waiting_on() const;

 private:
  size_t piece(const transport::Link& l) const;
  bool move_send(P2POp& op, WaitMonitor& mon);
  bool move_recv(P2POp& op, WaitMonitor& mon);
  bool match_self();
  void finished(P2POp& op);

  int rank_;
  const std::vector<transport::Link*>& links_;
  size_t chunk_;
  std::vector<uint64_t>& send_seq_;
  std::vector<uint64_t>& recv_seq_;
  std::vector<P2POp> ops_;    // in posting order
  std::vector<size_t> left_;  // by owner: operations not finished
  size_t active_ = 0;
  size_t first_open_ = 0;      // ops_ before it are all finished
  std::vector<uint8_t> seen_;  // per (peer, direction), scratch of progress()
};

}  // namespace coral
