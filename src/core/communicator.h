// A communicator: the ranks, their links, the tuner's parameters and the progress thread.
#pragma once
#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>

#include "base/settings.h"
#include "bootstrap/store.h"
#include "collectives/tuner/tuner.h"
#include "core/executor.h"
#include "core/progress.h"
#include "transport/transport.h"

namespace coral {

struct GpuState;

class Communicator {
 public:
  // Collective over all ranks: exchanges host ids, connects transports, then a barrier.
  // prefix scopes this communicator's keys in the store.
  // timeout_s > 0 overrides CORAL_TIMEOUT for this communicator.
  Communicator(std::shared_ptr<bootstrap::Store> store, const std::string& prefix, int rank, int nranks,
               double timeout_s = 0);
  ~Communicator();

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }

  // Blocking: waits for queued non-blocking operations, then runs the call on this thread.
  void run(Call call);
  std::shared_ptr<Request> submit(Call call);
  // Stream-ordered (NCCL's semantics): returns at once; the call runs once the stream's earlier
  // work is done, and the stream's later work waits for it. device: the buffers are on the GPU.
  void run_on_stream(Call call, void* stream, bool device);
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
  // The trials' settled picks as a CORAL_ALGO value.
  std::string trial_picks() const { return tuner_.overrides(); }
  // Name of the transport that carries traffic to peer ("self" for this rank).
  const std::string& transport_of(int peer) const { return host_.transport_of[peer]; }
  // The largest message the transports take: the chunk for algorithms without a pipeline.
  size_t chunk_bytes() const { return host_.max_message == SIZE_MAX ? (1u << 20) : host_.max_message; }
  // Marks the communicator failed and tells local peers.
  void abort(const std::string& why);
  coralResult_t async_error() const;
  std::string last_error() const;
  void set_last_error(const std::string& msg);

 private:
  // background: on the progress thread, which shares the cores with the caller's compute.
  // device: device buffers over cuda_ipc links.
  void execute(Call& call, bool background = false, bool device = false);
  // On the progress thread: a stream-ordered call (gpu_calls.cc).
  void run_stream_call(Request& r);
  void connect_device_links();
  void staged(Call& call);
  // The pinned buffers staged() runs call through: send pieces in 0 and 1, receive pieces in 2
  // and 3 (a whole non-element-wise call in 0 and 2), null where unused. The caller's thread
  // calls it first, before its stream is parked, so that staged() finds them allocated.
  std::array<std::byte*, 4> staging_buffers(const Call& call);
  void record_failure(coralResult_t code, const std::string& msg);
  // Throws the earlier failure's code and reason once the communicator has failed.
  void check_usable() const;
  struct Cached;
  Cached& schedule_for(const collectives::CollArgs& a, collectives::Algo algo);
  // On the progress thread: runs one queued request and finishes it.
  void run_queued(std::shared_ptr<Request>& req);
  void probe_links();
  void p2p(bool send, void* buf, size_t bytes, int peer);
  void wait_idle();
  // After a trial's last timed call: the ranks' scores combined, and the pick kept.
  void agree(collectives::Trial& trial, const collectives::CollArgs& args, bool background);

  std::shared_ptr<bootstrap::Store> store_;
  std::string prefix_;
  std::vector<transport::PeerInfo> peers_;
  int rank_, nranks_;
  config::Settings settings_;
  double timeout_s_;
  collectives::Tuner tuner_;
  std::vector<int> host_index_;  // per rank: its host, numbered by first appearance (hierarchical algorithms)
  transport::LinkSet host_;      // host-buffer links to every peer
  uint64_t coll_seq_ = 0;
  std::vector<uint64_t> p2p_seq_send_, p2p_seq_recv_;
  std::unique_ptr<GpuState> gpu_;
  using CacheKey = std::tuple<int, size_t, int, int, int, int, size_t>;
  struct Cached {
    collectives::Schedule schedule;
    size_t chunk;  // elements, as the schedule was built with
    Plan plan;     // against host_.links, made at the first host call
  };
  std::map<CacheKey, Cached> cache_;
  bool agreeing_ = false;  // inside agree(): its all-reduce runs the cost model's pick
  // The last call's shape and its chunk limit, and what it was given: a cache_ entry
  // (schedule_for() only clears cache_ on a miss, which sets last_ again).
  using CallKey = std::tuple<int, size_t, int, int, int, size_t>;
  CallKey last_key_;
  Cached* last_ = nullptr;
  std::vector<std::byte> scratch_;
  int spin_ = 0;
  int pause_polls_ = 0;

  mutable std::mutex state_mu_;
  // Written under state_mu_, after failure_; atomic so that check_usable() need not lock.
  std::atomic<coralResult_t> failed_{coralSuccess};
  std::string failure_;
  std::string last_error_;

  std::mutex exec_mu_;  // one operation at a time
  ProgressQueue queue_{rank_, [this](std::shared_ptr<Request>& r) { run_queued(r); }};
};

}  // namespace coral
