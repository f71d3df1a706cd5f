// The schedule IR: for one rank, an ordered list of steps over a small vocabulary. Builders are
// pure functions of CollArgs; the executor (core/) runs the steps over transport links.
//
// Execution model: steps run in order; each step moves at most one message per link direction
// (builders cut data into chunks of at most CollArgs::chunk elements). A transport must let
// kMinInFlight messages per direction be in flight: a ring's recv_reduce_send needs a free slot
// while its previous send may still sit unread (with one slot, every rank of a ring can wait on
// its successor). verify() proves progress with exactly that depth.
#pragma once
#include <coral/coral.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace coral::collectives {

constexpr int kMinInFlight = 2;

enum class Coll : uint8_t {
  AllReduce,
  ReduceScatter,
  AllGather,
  Broadcast,
  Reduce,
  Barrier,
  Send,
  Recv,
  AllToAll,
  AllToAllv,
  Gather,
  Scatter,
  AllGatherv,
  ReduceScatterv,
};
const char* coll_name(Coll c);

enum class Buf : uint8_t { None, Send, Recv, Scratch };

// A buffer position, in elements.
struct Ref {
  Buf buf = Buf::None;
  size_t off = 0;
};

enum class OpKind : uint8_t {
  Send,            // peer <- src
  Recv,            // dst <- peer
  RecvReduce,      // dst <- peer (op) src
  RecvReduceSend,  // peer_out <- peer (op) src   (dst too, when set)
  RecvCopySend,    // peer_out <- peer            (dst too, when set)
  Copy,            // dst <- src
  Reduce,          // dst <- src (op) src2          (local)
  Scale,           // dst <- dst / nranks          (the end of coralAvg)
};
const char* op_kind_name(OpKind k);

// Built with the named constructors below (send(), recv_reduce(), ...), which leave the fields a
// kind does not use at these defaults.
struct Step {
  OpKind kind = OpKind::Send;
  int32_t peer = -1;      // the peer received from (or sent to, for Send)
  int32_t peer_out = -1;  // the peer forwarded to
  Ref src = {};
  Ref dst = {};
  size_t count = 0;  // elements; 0 is a real (empty) message for Send/Recv
  Ref src2 = {};     // second input of Reduce
  // Send only: nothing in this schedule writes src after this step, so a transport may let the
  // peer read it in place (single copy) any time until the operation ends.
  bool stable_src = false;
  // Send, Recv, RecvReduce: the message is a post, one buffer sent to several peers that a
  // transport may publish once (transport::Poster). Posts between two ranks form their own
  // ordered channel, apart from other messages; both sides must mark the message alike.
  bool posted = false;
};

// Named constructors, one per OpKind; n is the element count and `stable` Step::stable_src.
// Builders that post a message set Step::posted on the result.
inline Step send(int32_t peer, Ref src, size_t n, bool stable = false) {
  return {.kind = OpKind::Send, .peer = peer, .src = src, .count = n, .stable_src = stable};
}
inline Step recv(int32_t peer, Ref dst, size_t n) {
  return {.kind = OpKind::Recv, .peer = peer, .dst = dst, .count = n};
}
// dst <- the message from peer (op) src.
inline Step recv_reduce(int32_t peer, Ref src, Ref dst, size_t n) {
  return {.kind = OpKind::RecvReduce, .peer = peer, .src = src, .dst = dst, .count = n};
}
// The message from peer (op) src goes on to peer_out, and into dst too unless dst is {}.
inline Step recv_reduce_send(int32_t peer, int32_t peer_out, Ref src, size_t n, Ref dst = {}) {
  return {.kind = OpKind::RecvReduceSend, .peer = peer, .peer_out = peer_out, .src = src, .dst = dst, .count = n};
}
// The message from peer goes on to peer_out, and into dst too unless dst is {}.
inline Step recv_copy_send(int32_t peer, int32_t peer_out, Ref dst, size_t n) {
  return {.kind = OpKind::RecvCopySend, .peer = peer, .peer_out = peer_out, .dst = dst, .count = n};
}
inline Step copy(Ref src, Ref dst, size_t n) { return {.kind = OpKind::Copy, .src = src, .dst = dst, .count = n}; }
// dst <- src (op) src2, all local.
inline Step reduce(Ref src, Ref src2, Ref dst, size_t n) {
  return {.kind = OpKind::Reduce, .src = src, .dst = dst, .count = n, .src2 = src2};
}
// dst <- dst / nranks (the end of coralAvg).
inline Step scale(Ref dst, size_t n) { return {.kind = OpKind::Scale, .dst = dst, .count = n}; }

// The per-rank counts and displacements (elements) of the v-collectives:
// - AllToAllv: this rank's sendcounts/sdispls (send_*) and recvcounts/rdispls (recv_*), P each;
//   they differ between ranks.
// - AllGatherv: recv_counts and recv_displs, P each, the same on every rank.
// - ReduceScatterv: recv_counts, P, the same on every rank (block j of the send buffer starts at
//   the sum of recv_counts[0..j)).
struct VCounts {
  std::vector<size_t> send_counts, send_displs, recv_counts, recv_displs;
};

struct CollArgs {
  Coll coll = Coll::AllReduce;
  // AR/bcast/reduce: count; RS: recvcount; AG: sendcount; send/recv: count; all-to-all, gather,
  // scatter: count per rank; v-collectives: this rank's own count (AGv: sendcount, RSv: recvcount,
  // AAv: the sum of its recvcounts).
  size_t count = 0;
  coralDataType_t dtype = coralFloat32;
  coralRedOp_t op = coralSum;
  int root = 0;  // or the peer of send/recv
  int nranks = 1;
  int rank = 0;
  size_t chunk = 1 << 16;  // max elements per message
  // Host index of every rank (hierarchical algorithms); nullptr means one host. Owned by the
  // caller and fixed for a communicator's life.
  const std::vector<int>* hosts = nullptr;
  // The ring's order (position -> rank, a permutation) that topology chose, for the ring
  // builders; nullptr means rank order. Owned by the caller, fixed like hosts.
  const std::vector<int>* order = nullptr;
  std::shared_ptr<const VCounts> v;  // v-collectives only
  // sendbuff == recvbuff (for gather/scatter: the root's block aliases, as MPI_IN_PLACE). Only
  // collectives whose schedule must differ read it (in-place all-to-all needs scratch).
  bool in_place = false;
};

struct Schedule {
  std::string algo;
  int nranks = 1;
  int rank = 0;
  std::vector<Step> steps;
  // Elements each buffer must hold (for checks and the verifier).
  size_t send_elems = 0;
  size_t recv_elems = 0;
  size_t scratch_elems = 0;  // private to the rank, provided by the executor
};

std::string dump(const Schedule& s);

// Block b of n elements split into p near-equal blocks: [offset, offset + size).
inline size_t block_size(size_t n, int p, int b) { return n / p + (static_cast<size_t>(b) < n % p ? 1 : 0); }
inline size_t block_offset(size_t n, int p, int b) {
  return static_cast<size_t>(b) * (n / p) + std::min<size_t>(static_cast<size_t>(b), n % p);
}

}  // namespace coral::collectives

namespace coral {
// The schedule IR's short name, as code and docs write its steps: sched::send(peer, src, n).
namespace sched = collectives;
}  // namespace coral
