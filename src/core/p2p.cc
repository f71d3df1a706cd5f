#include "core/p2p.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "core/executor.h"

namespace coral {

P2PEngine::P2PEngine(int rank, const std::vector<transport::Link*>& links, size_t chunk,
                     std::vector<uint64_t>& send_seq, std::vector<uint64_t>& recv_seq)
    : rank_(rank), links_(links), chunk_(chunk), send_seq_(send_seq), recv_seq_(recv_seq), seen_(links.size() * 2) {}

size_t P2PEngine::add(std::vector<P2POp> ops) {
  const size_t id = left_.size();
  left_.push_back(ops.size());
  for (P2POp& op : ops) {
    op.owner = id;
    if (op.peer != rank_) {
      // The pair's n-th message in each direction: both sides count alike, so the tags agree.
      const uint64_t seq = op.send ? send_seq_[op.peer]++ : recv_seq_[op.peer]++;
      op.tag = make_tag(collectives::Coll::Send, coralUint8, coralSum, seq);
    }
    ops_.push_back(op);
    ++active_;
  }
  return id;
}

void P2PEngine::finished(P2POp& op) {
  op.finished = true;
  --left_[op.owner];
  --active_;
}

// Both ends of a link are one transport with settings every rank agreed on, so they cut alike.
size_t P2PEngine::piece(const transport::Link& l) const {
  return chunk_ ? std::min(chunk_, l.max_message()) : l.max_message();
}

bool P2PEngine::move_send(P2POp& op, WaitMonitor& mon) {
  transport::Link& l = *links_[op.peer];
  bool moved = false;
  // An empty send is one empty message, so that the receiver's count check sees it.
  while (!op.finished) {
    const size_t n = std::min(piece(l), op.bytes - op.done);
    if (!l.send_ready(n)) break;
    std::byte* out = l.send_acquire(n, mon);
    if (n) std::memcpy(out, op.buf + op.done, n);
    l.send_commit(n, op.tag);
    op.done += n;
    op.started = moved = true;
    if (op.done == op.bytes) finished(op);
  }
  return moved;
}

bool P2PEngine::move_recv(P2POp& op, WaitMonitor& mon) {
  transport::Link& l = *links_[op.peer];
  bool moved = false;
  while (!op.finished) {
    if (!l.recv_ready()) break;
    const size_t n = std::min(piece(l), op.bytes - op.done);
    const transport::Message m = l.recv_peek(mon, false);
    if (m.tag != op.tag || m.bytes != n) {
      if (m.tag != op.tag && (m.tag >> 56) != static_cast<uint64_t>(collectives::Coll::Send))
        fail(coralInvalidUsage,
             fmt::format("rank {} sent data for '{}' while this rank waits for a receive of {} bytes: point-to-point "
                         "calls and collectives were issued in different orders",
                         op.peer, describe_tag(m.tag), op.bytes));
      fail(coralInvalidUsage,
           fmt::format("rank {} sent a message that does not match this rank's receive of {} bytes (piece of {} "
                       "bytes at offset {}, got {}): the ranks' send and receive counts differ",
                       op.peer, op.bytes, n, op.done, m.bytes));
    }
    if (n) {
      if (m.data)
        std::memcpy(op.buf + op.done, m.data, n);
      else
        l.recv_read(m, op.buf + op.done);
    }
    l.recv_release();
    op.done += n;
    op.started = moved = true;
    if (op.done == op.bytes) finished(op);
  }
  return moved;
}

// Sends to this rank and receives from it pair up in posting order.
bool P2PEngine::match_self() {
  bool moved = false;
  while (true) {
    P2POp *s = nullptr, *r = nullptr;
    for (size_t i = first_open_; i < ops_.size() && (!s || !r); ++i) {
      P2POp& op = ops_[i];
      if (op.finished || op.peer != rank_) continue;
      if (op.send && !s) s = &op;
      if (!op.send && !r) r = &op;
    }
    if (!s || !r) return moved;
    if (s->bytes != r->bytes)
      fail(coralInvalidUsage, fmt::format("a send of {} bytes to this rank (rank {}) meets a receive of {} bytes from "
                                          "itself: the counts differ",
                                          s->bytes, rank_, r->bytes));
    if (s->bytes) std::memmove(r->buf, s->buf, s->bytes);
    finished(*s);
    finished(*r);
    moved = true;
  }
}

bool P2PEngine::progress(WaitMonitor& mon) {
  bool moved = match_self();
  std::fill(seen_.begin(), seen_.end(), 0);
  for (size_t i = first_open_; i < ops_.size(); ++i) {
    P2POp& op = ops_[i];
    if (op.finished || op.peer == rank_) continue;
    uint8_t& seen = seen_[static_cast<size_t>(op.peer) * 2 + (op.send ? 1 : 0)];
    if (seen) continue;  // an earlier message of this peer and direction is not through yet
    seen = 1;
    moved |= op.send ? move_send(op, mon) : move_recv(op, mon);
    if (!op.finished) continue;
    seen = 0;  // the next message of the channel may start in this pass
  }
  while (first_open_ < ops_.size() && ops_[first_open_].finished) ++first_open_;
  if (first_open_ > 1024 && first_open_ * 2 > ops_.size()) {
    ops_.erase(ops_.begin(), ops_.begin() + static_cast<std::ptrdiff_t>(first_open_));
    first_open_ = 0;
  }
  return moved;
}

std::vector<int> P2PEngine::waiting_on() const {
  std::vector<int> peers;
  for (size_t i = first_open_; i < ops_.size(); ++i)
    if (!ops_[i].finished && ops_[i].peer != rank_ &&
        std::find(peers.begin(), peers.end(), ops_[i].peer) == peers.end())
      peers.push_back(ops_[i].peer);
  return peers;
}

}  // namespace coral
