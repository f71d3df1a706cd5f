// The transport interface. A Link is a connection with one peer carrying ordered messages in
// both directions. Messages are received in place (recv_peek) so the executor reduces straight
// out of the transport's buffer, and sent by filling a buffer the transport provides
// (send_acquire), so a reduction can write its result directly into the outgoing message.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/wait.h"
#include "bootstrap/store.h"

namespace coral::transport {

struct Message {
  const std::byte* data;  // nullptr: the payload is still in the sender's memory (recv_read)
  size_t bytes;
  uint64_t tag;  // identifies the operation; a mismatch means ranks called different collectives
};

// One message published once for several peers of a domain (the one-shot all-reduce sends one
// vector to every peer). Posts travel apart from the links' FIFOs: each receiver reads a
// sender's posts in order with Link::post_peek, and a schedule marks which messages are posts
// (Step::posted), so both sides agree without asking.
class Poster {
 public:
  virtual ~Poster() = default;
  // Largest post; larger posted messages go as ordinary sends on both sides.
  virtual size_t max_bytes() const = 0;
  // A buffer for the next post; blocks until the readers of the post that last used it are done.
  virtual std::byte* acquire(size_t bytes, WaitMonitor& mon) = 0;
  // The readers `peers` (global ranks, all on this poster's domain, not this rank) checked and
  // translated once, as an id for commit(); ids stay valid for the poster's life. Posts go to a
  // few fixed sets (a plan's), so translating them per post would be wasted work.
  virtual uint32_t readers(const int* peers, size_t npeers) = 0;
  // Publishes the filled buffer to the readers an id from readers() names.
  virtual void commit(size_t bytes, uint64_t tag, uint32_t readers) = 0;
};

class Link {
 public:
  virtual ~Link() = default;
  virtual size_t max_message() const = 0;
  // Messages per direction a sender can always commit ahead of the peer's releases (a transport
  // may allow more, but must block eventually).
  virtual int max_in_flight() const = 0;
  // A buffer for the next outgoing message of `bytes` (<= max_message()); blocks until a slot is
  // free. Small messages may get a buffer that travels with the message's header.
  virtual std::byte* send_acquire(size_t bytes, WaitMonitor& mon) = 0;
  virtual void send_commit(size_t bytes, uint64_t tag) = 0;
  // Single-copy sends: whether a message of `bytes` at src may be passed by reference with
  // send_direct (the peer copies straight out of src).
  virtual bool direct_ok(const void* /*src*/, size_t /*bytes*/) const { return false; }
  // src must stay unchanged until flush() returns.
  virtual void send_direct(const void* src, size_t bytes, uint64_t tag, WaitMonitor& mon);
  // The poster of this link's domain (nullptr: this link carries no posts).
  virtual Poster* poster() { return nullptr; }
  // Waits until the peer has released every message sent so far.
  virtual void flush(WaitMonitor&) {}
  // The next incoming message, valid until recv_release(). With want_local the payload is made
  // local (data != nullptr); otherwise a by-reference message has data == nullptr.
  virtual Message recv_peek(WaitMonitor& mon, bool want_local) = 0;
  // Copies the payload of the message recv_peek returned into dst.
  virtual void recv_read(const Message& m, void* dst) = 0;
  virtual void recv_release() = 0;
  // The peer's next post (in place, valid until post_release), and its release.
  virtual Message post_peek(WaitMonitor& mon);
  virtual void post_release();

  // Readiness probes, so that one thread can progress many sends and receives without blocking
  // on any one of them. Neither ever blocks; both may make non-blocking progress (read credits
  // or messages off the wire). Both also turn true once the link failed or a peer of its domain
  // aborted, and stay true, so that the blocking call then reports it; a failure may take a few
  // probes to show. A probe moves its own link first: a caller that probes should also call
  // Domain::advance() of network domains (needs_polling) between passes, as blocking waits do
  // through WaitMonitor::poll_others, for links it is not probing just then.
  //
  // True when send_acquire(bytes) (and send_direct of that size) would return without waiting.
  virtual bool send_ready(size_t bytes) = 0;
  // True when recv_peek would return without waiting: a whole message is in.
  virtual bool recv_ready() = 0;
};

// What every rank publishes at bootstrap.
struct PeerInfo {
  int rank = 0;
  int pid = 0;
  std::string host_id;
};

// The links one transport made for a set of peers.
class Domain {
 public:
  virtual ~Domain() = default;
  virtual Link* link(int peer) = 0;
  // "" while peer is healthy, else what happened to it.
  virtual std::string peer_failure(int peer) = 0;
  // Reads what the connections say now, so that a peer whose connection closed is seen failed
  // by peer_failure even when no wait was reading from it (coralCommGetFailedRanks).
  virtual void check_peers() {
    if (needs_polling()) advance();
  }
  // "" unless some peer aborted the communicator (then its message).
  virtual std::string remote_abort() = 0;
  // Tells every peer of this domain that this rank failed, with why.
  virtual void abort(const std::string& why) = 0;
  // Called at the end of every operation: hands whatever is still queued to the wire, so peers
  // can finish while this rank computes.
  virtual void drain(WaitMonitor&) {}
  // Non-blocking progress of everything in flight, for waits on other transports; false when
  // this transport never needs it (shared memory moves without help).
  virtual bool needs_polling() const { return false; }
  virtual void advance() {}
  // A waiter for `peer` (global rank) gives up its core: sched_yield, unless this transport can
  // tell that the yield would not help any rank run.
  virtual void give_way(int peer) {
    (void)peer;
    sched_yield();
  }
  // True when give_way knows which ranks run (shared memory): waits on any transport then ask
  // this domain before yielding.
  virtual bool knows_cpus() const { return false; }
  // A small area (kBoardBytes) this rank publishes to the peers of this domain without sending
  // anything, and theirs: on shared memory a part of the control page they all map. The flight
  // recorder keeps its status there, so a peer's timeout can read what this rank is doing even
  // when it is stopped. null where the transport has none.
  static constexpr size_t kBoardBytes = 256;
  virtual void* own_board() { return nullptr; }
  virtual const void* peer_board(int peer) {
    (void)peer;
    return nullptr;
  }
};

struct ConnectArgs {
  bootstrap::Store* store;
  std::string prefix;                  // store key scope of this communicator
  const std::vector<PeerInfo>* peers;  // all ranks, indexed by rank
  int rank;
  std::vector<int> targets;  // ranks this transport must connect to (all on this host for shm)
  double timeout_s;
  // The NIC the topology chose for this rank (core/placement.h): a network interface name and
  // the RDMA port ("mlx5_0:1") of the same port, "" where unknown. The user's knobs
  // (CORAL_SOCKET_IFNAME, CORAL_IB_HCA, UCX_NET_DEVICES) win over them.
  std::string nic = {}, rdma = {};
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;
  // False when this host lacks what the transport needs (an RDMA device): auto mode skips it.
  virtual bool available() const { return true; }
  virtual bool can_connect(const PeerInfo& a, const PeerInfo& b) const = 0;
  virtual std::unique_ptr<Domain> connect(const ConnectArgs& args) = 0;
  // True for transports of device buffers (cuda_ipc); the others carry host memory.
  virtual bool device_memory() const { return false; }
  // The knob that sets how many messages a link has in flight, for an error that asks for more.
  virtual const char* depth_knob() const = 0;
};

enum class Memory { Host, Device };

// Every link of one rank, whichever transports made them.
struct LinkSet {
  std::vector<std::unique_ptr<Domain>> domains;
  std::vector<Link*> links;               // by rank; null for this rank and unconnected ranks
  std::vector<Domain*> domain_of;         // by rank, likewise
  std::vector<std::string> transport_of;  // by rank: "self" for this rank, "" where unconnected
  std::vector<Domain*> polled;            // domains a wait on any other must keep going
  Domain* cpu_gate = nullptr;             // the domain that knows which ranks run (knows_cpus)
  size_t max_message = SIZE_MAX;          // the smallest of the links' largest messages
};

// Connects args.rank to args.targets through the registry's transports in order, each taking
// the targets it can reach; every link must allow min_in_flight messages. Host memory: a target
// that no transport reaches is an error naming both hosts. Device memory: only the device
// transports try, and targets they cannot reach stay unconnected (the caller stages them).
LinkSet connect_all(const ConnectArgs& args, Memory memory, int min_in_flight);

// Ordered list of the transports to use (CORAL_TRANSPORT may force some).
std::vector<Transport*> registry();
// Every transport this build has, whatever CORAL_TRANSPORT says.
std::vector<Transport*> built_transports();
// The transports of device buffers (cuda_ipc), tried for them alone.
std::vector<Transport*> device_transports();

}  // namespace coral::transport
