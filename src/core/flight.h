// The flight recorder: each rank's recent operations, and a board of what it is doing now that
// peers read when a wait times out, so the error says who is stuck and where, not only who gave
// up. The hot path pays a few relaxed stores per operation and one per schedule step (plain
// moves on x86); clocks are the coarse ones (a memory read).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <functional>
#include <string>

#include "collectives/registry.h"
#include "collectives/schedule.h"
#include "coral/coral.h"

namespace coral {

// What one rank publishes about itself. It lives where its peers can read it without messages:
// in the shared-memory control page when the rank has local peers (transport::Domain::own_board),
// otherwise in the recorder; ranks on other hosts see a copy in the store, written when a wait
// has slept for a while and when it fails.
struct FlightBoard {
  static constexpr uint32_t kMagic = 0x464c5431;  // "FLT1"
  std::atomic<uint32_t> magic;
  std::atomic<uint32_t> kind;          // the current op's: coll | dtype << 8 | op << 16
  std::atomic<uint64_t> number;        // the current op's number: collectives #1, #2 ...; send/recv per peer
  std::atomic<uint64_t> count;         // elements
  std::atomic<uint32_t> step, nsteps;  // the schedule step it runs
  std::atomic<uint32_t> state;         // 0: none yet, 1: running, 2: completed, 3: failed
  std::atomic<int32_t> waiting_on;     // the rank a wait of step wait_step sleeps on
  std::atomic<uint32_t> wait_step;
  std::atomic<uint32_t> done_kind;  // the last completed collective's kind and number
  std::atomic<uint64_t> done_number;
  std::atomic<int64_t> heartbeat_ms;  // its last slice: a stopped rank's wait goes quiet
  std::atomic<int32_t> pid;           // readers on this host ask the kernel whether it is stopped

  void init();
  // Waiting: the rank sleeps in a wait of its current step (or failed in one).
  bool waiting() const;
};
static_assert(sizeof(FlightBoard) <= 128);

// A plain copy of a board (read racily from a live peer: each field is one atomic load).
struct FlightStatus {
  bool known = false;
  uint32_t kind = 0, step = 0, nsteps = 0, state = 0, done_kind = 0;
  uint64_t number = 0, count = 0, done_number = 0;
  int32_t waiting_on = -1;
  bool waiting = false;
  int64_t quiet_ms = -1;  // a waiting rank on this host: since its wait last ran (-1: unknown)
  bool stopped = false;   // on this host, and its process is stopped (SIGSTOP, a debugger)
  static FlightStatus read(const FlightBoard& b);
  std::string to_bytes() const;  // for the store
  static FlightStatus from_bytes(const std::string& s);
};

// An op's kind in one word: collective, dtype, op, flags (bits 24-25) and algorithm (26-30).
inline uint32_t flight_kind(collectives::Coll c, coralDataType_t t, coralRedOp_t op, collectives::Algo a) {
  return static_cast<uint32_t>(c) | static_cast<uint32_t>(t) << 8 | static_cast<uint32_t>(op) << 16 |
         (static_cast<uint32_t>(a) & 31u) << 26;
}
inline int64_t coarse_now_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// Point-to-point batches are numbered apart from collectives: "point-to-point #3".
constexpr uint32_t kFlightBatch = 1u << 24;
// Coral's own collectives (start-up probe, root and tuner agreements), numbered after the
// user's collective they follow: "allreduce (Coral's own, after #7)".
constexpr uint32_t kFlightInternal = 1u << 25;

// A user's collective (not send/recv, a batch, or Coral's own): "last completed" counts these.
inline bool completes_collective(uint32_t kind) {
  const auto c = static_cast<collectives::Coll>(kind & 0xff);
  return !(kind & (kFlightBatch | kFlightInternal)) && c != collectives::Coll::Send && c != collectives::Coll::Recv;
}

// "allreduce #12"
std::string op_label(uint32_t kind, uint64_t number);
// "allreduce #12 (float sum, 4 MiB, ring step 5 of 12)"
std::string op_detail(const FlightStatus& s);
// The same without where it is: "allreduce #12 (float sum, 4 MiB)"
std::string op_call(const FlightStatus& s);

class FlightRecorder {
 public:
  static constexpr size_t kEntries = 256;
  // 32 bytes: a few plain stores per operation, and 256 of them fit in 8 KiB.
  struct Entry {
    std::atomic<uint64_t> number{0};
    std::atomic<uint64_t> count{0};
    std::atomic<uint32_t> kind{0};
    std::atomic<uint32_t> start_ms{0};  // since the recorder's creation (CLOCK_MONOTONIC_COARSE)
    std::atomic<uint32_t> step{0};      // where it ended
    std::atomic<int16_t> result{-1};    // -1: running
    std::atomic<int16_t> waited_on{-1};
  };

  FlightRecorder(int rank, int nranks);
  ~FlightRecorder();
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;
  // Where this rank publishes (a shared page of at least sizeof(FlightBoard) bytes), or null to
  // keep the board in the recorder.
  void place_board(void* at);
  FlightBoard& board() { return *board_; }

  // Inline: every operation pays these stores, nothing more (no clock but the coarse one).
  void start(uint32_t kind, uint64_t number, size_t count, size_t nsteps) {
    constexpr auto R = std::memory_order_relaxed;
    FlightBoard& b = *board_;
    b.kind.store(kind, R);
    b.number.store(number, R);
    b.count.store(count, R);
    b.step.store(0, R);
    b.nsteps.store(static_cast<uint32_t>(nsteps), R);
    b.state.store(1, R);
    const uint64_t n = next_.load(R);
    Entry& e = ring_[n % kEntries];
    e.result.store(-1, R);
    e.number.store(number, R);
    e.kind.store(kind, R);
    e.count.store(count, R);
    e.start_ms.store(static_cast<uint32_t>(coarse_now_ms() - epoch_ms_), R);
    e.waited_on.store(-1, R);
    next_.store(n + 1, std::memory_order_release);
    cur_ = &e;
  }
  void finish(coralResult_t rc) {
    constexpr auto R = std::memory_order_relaxed;
    FlightBoard& b = *board_;
    b.state.store(rc == coralSuccess ? 2 : 3, R);
    const uint32_t kind = b.kind.load(R);
    if (rc == coralSuccess && completes_collective(kind)) {
      b.done_kind.store(kind, R);
      b.done_number.store(b.number.load(R), R);
    }
    if (!cur_) return;
    cur_->step.store(b.step.load(R), R);
    cur_->result.store(static_cast<int16_t>(rc), std::memory_order_release);
    cur_ = nullptr;
  }
  // From a wait's check(): it sleeps on peer.
  void waiting_on(int peer);

  // This rank's ring as JSON lines, oldest first; `why` goes on the first line.
  std::string dump_jsonl(const std::string& why) const;
  // CORAL_DUMP_ON_TIMEOUT: where dump() appends (a directory: a file per rank in it).
  void set_dump_path(std::string path) { dump_path_ = std::move(path); }
  // Appends dump_jsonl to the dump path; to stderr if `or_stderr` and there is none.
  void dump(const std::string& why, bool or_stderr) const;

 private:
  int rank_, nranks_;
  std::string dump_path_;
  int64_t epoch_ms_;
  FlightBoard own_{};
  FlightBoard* board_;
  Entry ring_[kEntries];
  std::atomic<uint64_t> next_{0};  // entries written
  Entry* cur_ = nullptr;
};

// How a timed-out wait reads the others: board(r) fills a rank's status (shared page or store);
// false when nothing is known of it.
using BoardReader = std::function<FlightStatus(int rank)>;
// "waited 3 s for rank 3, which last started allreduce #12 and is in step 4 of it, waiting for
// rank 2; rank 2 ..." following who waits on whom to the rank that is stuck or behind.
std::string explain_wait(int me, const FlightStatus& mine, int peer, double waited_s, const BoardReader& board);
// A peer that has completed the very collective this rank still runs, called with another
// count, collective, datatype or op: waiting cannot help. Says so ("rank 1 completed allreduce
// #3 (float sum, 0 B, ...) while this rank ..."), or "" where the two agree.
std::string disagreement(const FlightStatus& mine, int peer, const FlightStatus& theirs);

// A communicator's view of its ranks' boards, as its monitors use it.
struct FlightPeers {
  FlightRecorder* recorder = nullptr;
  BoardReader read;               // any rank's status, this one's included
  std::function<void()> publish;  // copies this rank's status to the store; null on one host
  BoardReader read_local;         // the same where it costs a memory read (this host); else unknown
};

// SIGUSR1 dumps every live recorder of the process (to CORAL_DUMP_ON_TIMEOUT's file, else
// stderr). Registered recorders must unregister before they die.
void register_recorder(FlightRecorder* r);
void unregister_recorder(FlightRecorder* r);

}  // namespace coral
