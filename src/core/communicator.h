// A communicator: the ranks, their links, the tuner's parameters and the progress thread.
#pragma once
#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>

#include "base/settings.h"
#include "bootstrap/store.h"
#include "bootstrap/wire.h"
#include "collectives/tuner/tuner.h"
#include "core/executor.h"
#include "core/flight.h"
#include "core/placement.h"
#include "core/progress.h"
#include "transport/transport.h"

namespace coral::gpu {
struct WaitLimit;
}

namespace coral {

struct GpuState;
class P2PEngine;

class Communicator {
 public:
  // Collective over all ranks: exchanges host ids, connects transports, then a barrier.
  // prefix scopes this communicator's keys in the store.
  // timeout_s > 0 overrides CORAL_TIMEOUT for this communicator.
  // cancel (made here when null) gives up the store waits of the creation and of the links made
  // later (cancel_store_waits); the store itself may be shared with other communicators.
  Communicator(std::shared_ptr<bootstrap::Store> store, const std::string& prefix, int rank, int nranks,
               double timeout_s = 0, std::shared_ptr<bootstrap::CancelToken> cancel = nullptr);
  ~Communicator();
  // The checks of this process's settings the constructor makes, without it: a caller runs
  // them before it connects to the store, so that a setting every rank rejects fails every
  // rank at once (the first to fail would otherwise close the store on ranks still joining).
  static void check_settings();

  // coralCommSplit in two parts: the exchange of colors and keys, collective over this
  // communicator (nothing for CORAL_SPLIT_NOCOLOR), then the child's creation, collective over
  // the child, which may run on another thread. Children share the store and inherit the
  // timeout (shrink.cc).
  struct SplitPlan {
    std::string prefix;
    int rank, size;
  };
  std::optional<SplitPlan> plan_split(int color, int key);
  // cancel: the child's token (coralCommAbort of a child still being made gives it up).
  std::function<std::unique_ptr<Communicator>()> child_maker(const SplitPlan& plan,
                                                             std::shared_ptr<bootstrap::CancelToken> cancel) const;
  // coralCommShrink: the ranks but `exclude` (sorted, distinct), through a new rendezvous served
  // by the lowest survivor, so that it works whichever ranks (and store host) died.
  // Takes what it needs now; the returned maker makes the child, on any thread, even once this
  // communicator is gone.
  std::function<std::unique_ptr<Communicator>()> shrink_maker(const std::vector<int>& exclude,
                                                              std::shared_ptr<bootstrap::CancelToken> cancel);
  // The peers whose process or connection is gone, as the transports see it now (ascending).
  std::vector<int> failed_ranks();

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }

  // Blocking: waits for queued non-blocking operations, then runs the call on this thread.
  void run(Call call);
  std::shared_ptr<Request> submit(Call call);
  // A group's calls on this communicator as one request: collectives in order, then every
  // point-to-point call together (core/p2p.h).
  std::shared_ptr<Request> submit_group(std::vector<Call> calls);
  // Stream-ordered (NCCL's semantics): returns at once; the call runs once the stream's earlier
  // work is done, and the stream's later work waits for it. device: the buffers are on the GPU.
  // Where the caller must wait on the host instead (CORAL_GPU_STREAM_WAIT), returns the request
  // to finish (Request::wait_ok) before returning to the user: a group queues every
  // communicator's first, as with host calls. Otherwise null.
  std::shared_ptr<Request> run_on_stream(Call call, void* stream, bool device);
  // A group's point-to-point calls on device buffers, stream-ordered as one request: they
  // progress together, as on the host (gpu_group.cc). Returns as run_on_stream.
  std::shared_ptr<Request> run_group_on_stream(std::vector<Call> calls, void* stream);
  // The GPU state and this host's cuda_ipc links, made at the first device call; collective:
  // every rank on the host makes its links then.
  void prepare_device();
  bool device_prepared();
  // prepare_device for several communicators one thread drives (ncclCommInitAll's, in one
  // group): each on its own thread at once, since each waits for the others' ranks; each with
  // the GPU its calls were made on.
  static void prepare_devices(const std::vector<std::pair<Communicator*, int>>& comms);
  // The GPU the communicator's device calls use, -1 before the first one.
  int gpu_device();
  // Bytes per message of device-buffer calls on one host (cuda_ipc slots); 0 before the first.
  size_t device_chunk_bytes();
  // What a call of this shape runs once trials are over, for coralCommQuery: the algorithm, its
  // chunk in bytes, and whether trials of the shape still run.
  struct CallInfo {
    collectives::Algo algo;
    size_t chunk_bytes;
    bool tuning;
  };
  CallInfo query(collectives::CollArgs args, bool device);
  // The cost model's time for that call in microseconds (coralQueryEstimateUs): the schedule
  // query() names, built for every rank and timed over the link classes (collectives/simulate.h).
  double estimate_us(collectives::CollArgs args, bool device);
  // The trials' settled picks as a CORAL_ALGO value.
  std::string trial_picks() const { return tuner_.overrides(); }
  // What the topology decided at init: ring order, each rank's device and NIC.
  const Placement& placement() const { return placement_; }
  // Name of the transport that carries traffic to peer ("self" for this rank).
  const std::string& transport_of(int peer) const { return host_.transport_of[peer]; }
  // The largest message the transports take: the chunk for algorithms without a pipeline.
  size_t chunk_bytes() const { return host_.max_message == SIZE_MAX ? (1u << 20) : host_.max_message; }
  // PreMulSum ops (coralRedOpCreatePreMulSum): handles from coralNumOps up, below coralBand,
  // that name this communicator, so a destroyed or another communicator's op is refused.
  static constexpr int kMaxPremulOps = 64;
  coralRedOp_t create_premul(const void* scalar, coralDataType_t dtype, bool device_scalar);
  void destroy_premul(coralRedOp_t op);
  // The scalar a call of dtype with op uses; throws coralInvalidArgument naming what is wrong.
  Premul premul_op(coralRedOp_t op, coralDataType_t dtype) const;
  // coralCommRegister/Deregister: the registrations this communicator holds (api_mem.cc).
  struct Registration {
    void* buff = nullptr;
    size_t size = 0;
    bool region = false;  // in coralMemAlloc memory, counted there until this goes
    ~Registration();
  };
  void add_registration(Registration* r);
  // Removes r once the outstanding operations are done; throws coralInvalidArgument when r is
  // not one of this communicator's.
  std::unique_ptr<Registration> remove_registration(void* handle);
  // Marks the communicator failed and tells local peers.
  void abort(const std::string& why);
  // coralCommRevoke, coralCommAbort: this communicator's waits on the store (device links being
  // connected by a first device call) end at once, and so do later ones; other users of the
  // store go on.
  void cancel_store_waits() { cancel_->cancel(); }
  // coralCommSetTimeout: operations that start from now on, and communicators split from this
  // one, wait on a peer at most seconds.
  void set_timeout(double seconds) {
    timeout_s_ = seconds;
    timeout_override_ = seconds;
  }
  coralResult_t async_error() const;
  std::string last_error() const;
  void set_last_error(const std::string& msg);

 private:
  // background: on the progress thread, which shares the cores with the caller's compute.
  // device: device buffers over cuda_ipc links.
  void execute(Call& call, bool background = false, bool device = false);
  // On the progress thread: a stream-ordered call (gpu_calls.cc).
  void run_stream_call(Request& r);
  // The GpuState, made at the first stream-ordered call; and queueing a stream-ordered request.
  void ensure_gpu();
  std::shared_ptr<Request> submit_stream(std::shared_ptr<Request> req, void* stream);
  void connect_device_links();
  void staged(Call& call);
  // A PreMulSum call's inputs scaled into premul_buf_, which becomes its send buffer (premul.cc).
  void prescale(Call& call);
  // The same on the GPU, into GpuState::premul (premul.cc).
  void prescale_device(Call& call);
  // Elements of the send buffer a reducing call reads.
  size_t reduced_elems(const Call& call) const;
  // The pinned buffers staged() runs call through: send pieces in 0 and 1, receive pieces in 2
  // and 3 (a whole non-element-wise call in 0 and 2), null where unused. The caller's thread
  // calls it first, before its stream is parked, so that staged() finds them allocated.
  std::array<std::byte*, 4> staging_buffers(const Call& call);
  // Bytes of scratch the device schedule of this call needs (the one execute() will build), for
  // the caller's thread to reserve before it parks its stream.
  size_t device_scratch_bytes(const Call& call);
  // Fills in what a call's arguments take from the communicator: this rank, the rank count,
  // the ranks' hosts and the ring order.
  void place(collectives::CollArgs& a) const {
    a.rank = rank_;
    a.nranks = nranks_;
    a.hosts = &host_index_;
    a.order = ring_order_;
  }
  void record_failure(coralResult_t code, const std::string& msg);
  // Throws the earlier failure's code and reason once the communicator has failed.
  void check_usable() const;
  // How long the progress thread waits for the GPU's own work: the timeout, and no longer than
  // the communicator is usable.
  gpu::WaitLimit gpu_limit() const;
  struct Cached;
  Cached& schedule_for(const collectives::CollArgs& a, collectives::Algo algo);
  // On the progress thread: runs one queued request and finishes it.
  void run_queued(std::shared_ptr<Request>& req);
  // A group or point-to-point request, with the point-to-point requests queued behind it
  // (batch.cc); finishes every request it runs.
  void run_batch(std::shared_ptr<Request>& first);
  // Moves the engine's operations until all are done, calling between() before each pass;
  // between() returns true while the wait is on this rank's own stream, not on a peer (no
  // timeout runs then). Returns whether a wait published its status (end_flight).
  bool drive(P2PEngine& engine, const std::function<bool()>& between);
  // A stream-ordered request's point-to-point calls, with those queued behind it (gpu_group.cc);
  // finishes each as it completes (r too), and raises the flag for each.
  void run_stream_p2p(Request& r);
  void probe_links();
  void p2p(bool send, void* buf, size_t bytes, int peer);
  void wait_idle();
  // After a trial's last timed call: the ranks' scores combined, and the pick kept.
  void agree(collectives::Trial& trial, const collectives::CollArgs& args, bool background);
  // Before a rooted collective: all ranks agree on its root, or all fail with coralInvalidUsage.
  void agree_root(const collectives::CollArgs& a, bool background);

  std::shared_ptr<bootstrap::CancelToken> cancel_;
  std::shared_ptr<bootstrap::Store> shared_store_;  // as given: children meet in it too
  std::shared_ptr<bootstrap::Store> store_;         // shared_store_ through cancel_
  std::string prefix_;
  double timeout_override_;  // the creator's timeout_s (0: CORAL_TIMEOUT), inherited by children
  uint64_t split_seq_ = 0, shrink_seq_ = 0;
  // The rendezvous this rank serves once a shrink makes it the root: bound at creation.
  struct Rescue {
    int listen_fd = -1;
    bootstrap::wire::Secret secret{};
    std::mutex mu;
    std::shared_ptr<void> server;  // started by the first shrink that needs it (under mu)
    ~Rescue();
  };
  std::shared_ptr<Rescue> rescue_;
  std::vector<std::string> rescue_addrs_;                // by rank
  std::vector<bootstrap::wire::Secret> rescue_secrets_;  // by rank
  std::shared_ptr<void> keepalive_;                      // a shrink's rendezvous, served by the parent's root
  std::vector<transport::PeerInfo> peers_;
  int rank_, nranks_;
  config::Settings settings_;
  std::atomic<double> timeout_s_;  // read by the progress thread; coralCommSetTimeout changes it
  collectives::Tuner tuner_;
  std::vector<int> host_index_;  // per rank: its host, numbered by first appearance (hierarchical algorithms)
  Placement placement_;
  void place(bootstrap::Exchange& exchange, const std::vector<PlaceInput>& inputs);
  // The ring builders' order, set once by place(): null for rank order, which builds the
  // schedules of old.
  const std::vector<int>* ring_order_ = nullptr;
  transport::LinkSet host_;  // host-buffer links to every peer
  uint64_t coll_seq_ = 0;    // every collective, for message tags
  uint64_t user_seq_ = 0;    // the user's collectives: "allreduce #12" in errors and dumps
  bool constructing_ = true;
  std::vector<uint64_t> p2p_seq_send_, p2p_seq_recv_;
  std::unique_ptr<GpuState> gpu_;
  using CacheKey = std::tuple<int, size_t, int, int, int, int, size_t, bool>;
  struct Cached {
    collectives::Schedule schedule;
    size_t chunk;                                      // elements, as the schedule was built with
    Plan plan;                                         // against host_.links, made at the first host call
    collectives::Algo algo = collectives::Algo::Auto;  // the flight recorder names it
  };
  std::map<CacheKey, Cached> cache_;
  Cached v_cached_;         // the running v-collective's
  int root_check_of_ = -1;  // inside agree_root: the rooted collective its all-reduce precedes
  bool agreeing_ = false;   // inside agree(): its all-reduce runs the cost model's pick
  // The last call's shape and its chunk limit, and what it was given: a cache_ entry
  // (schedule_for() only clears cache_ on a miss, which sets last_ again).
  using CallKey = std::tuple<int, size_t, int, int, int, size_t, bool>;
  static CallKey call_key(const collectives::CollArgs& a, size_t max_bytes) {
    return {static_cast<int>(a.coll),
            a.count,
            static_cast<int>(a.dtype),
            static_cast<int>(a.op),
            a.root,
            max_bytes,
            a.in_place};
  }
  CallKey last_key_;
  // device_scratch_bytes()' answers by shape; callers' threads share them.
  std::mutex scratch_need_mu_;
  std::map<CallKey, size_t> scratch_need_;
  Cached* last_ = nullptr;
  std::vector<std::byte> scratch_;
  int spin_ = 0;
  int pause_polls_ = 0;
  // Callers blocked on this communicator's queued requests (coralWait, a blocking call behind
  // them): the progress thread then polls eagerly, the caller's core being idle.
  std::atomic<int> callers_waiting_{0};

  struct PremulSlot {
    bool live = false;
    coralDataType_t dtype = coralFloat32;
    Premul scalar;
  };
  std::array<PremulSlot, kMaxPremulOps> premul_ops_{};
  int premul_base_ = 0;                // this communicator's handle range: [base, base + kMaxPremulOps)
  std::vector<std::byte> premul_buf_;  // pre-scaled inputs of host calls

  std::vector<std::unique_ptr<Registration>> registrations_;  // under state_mu_

  mutable std::mutex state_mu_;
  // Written under state_mu_, after failure_; atomic so that check_usable() need not lock.
  std::atomic<coralResult_t> failed_{coralSuccess};
  // check_usable() for the waits' monitors (PeerMonitor), which outlive no communicator.
  const std::function<void()> usable_ = [this] { check_usable(); };
  std::string failure_;
  std::string last_error_;

  // The flight recorder and how monitors read the ranks' boards (flight.h).
  std::unique_ptr<FlightRecorder> flight_;
  FlightPeers flight_peers_;
  void start_flight();
  FlightStatus rank_status(int r, bool local_only = false);
  // An operation ended: the recorder notes it; a failure dumps it (CORAL_DUMP_ON_TIMEOUT).
  void end_flight(coralResult_t rc, bool published, const std::string& why);
  uint64_t batch_seq_ = 0;

  std::mutex exec_mu_;  // one operation at a time
  ProgressQueue queue_{rank_, [this](std::shared_ptr<Request>& r) { run_queued(r); }};
};

}  // namespace coral
