#include "core/communicator.h"

#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <optional>

#include "base/config.h"
#include "base/error.h"
#include "base/host_id.h"
#include "base/log.h"
#include "base/settings.h"
#include "base/socket.h"
#include "base/wait.h"
#include "bootstrap/exchange.h"
#include "collectives/registry.h"
#include "core/executor.h"
#include "core/gpu_state.h"
#include "gpu/mem_ops.h"
#include "kernels/reduce.h"

namespace coral {

namespace {

// Polls before sleeping for operations run on the progress thread (see execute).
constexpr int kBackgroundSpin = 200;

using Clock = std::chrono::steady_clock;

// The settings that decide which schedule a call runs. Ranks that disagree on one would run
// different schedules and wait on each other until the timeout, so they are compared at start.
std::vector<std::pair<std::string, std::string>> schedule_settings(const collectives::TuneParams& t, size_t chunk,
                                                                   bool probe, bool check_roots) {
  std::string algo = collectives::algo_name(t.forced);
  for (const collectives::SizeRule& r : t.rules)
    algo += fmt::format(";{}:{}-{}:{}", collectives::coll_name(r.coll), r.lo, r.hi, collectives::algo_name(r.algo));
  return {{"CORAL_ALGO", algo},
          {"CORAL_SMALL_BYTES", std::to_string(t.small_bytes)},
          {"CORAL_TUNE_TRIALS", t.trials ? "1" : "0"},
          {"CORAL_CHUNK_BYTES", std::to_string(chunk)},
          {"CORAL_TUNE_PROBE", probe ? "1" : "0"},
          {"CORAL_CHECK_ROOTS", check_roots ? "1" : "0"}};
}

bool rooted(collectives::Coll c) {
  using collectives::Coll;
  return c == Coll::Broadcast || c == Coll::Reduce || c == Coll::Gather || c == Coll::Scatter;
}

// What every rank of a v-collective must pass alike: the recvcounts (the displacements only
// place blocks in this rank's own buffer, and MPI lets them differ between ranks).
uint64_t v_signature(const collectives::CollArgs& a) {
  if (!a.v || a.coll == collectives::Coll::AllToAllv) return 0;  // all-to-all-v: checked pairwise by size
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t c : a.v->recv_counts) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

}  // namespace

void Communicator::check_settings() {
  collectives::parse_overrides(config::Settings::from_env().algo);
  kernels::active();
}

Communicator::Communicator(std::shared_ptr<bootstrap::Store> store, const std::string& prefix, int rank, int nranks,
                           double timeout_s, std::shared_ptr<bootstrap::CancelToken> cancel)
    : cancel_(cancel ? std::move(cancel) : std::make_shared<bootstrap::CancelToken>()),
      shared_store_(std::move(store)),
      store_(std::make_shared<bootstrap::CancellableStore>(shared_store_, cancel_)),
      prefix_(prefix),
      timeout_override_(timeout_s),
      rank_(rank),
      nranks_(nranks) {
  log::set_thread_rank(rank);
  settings_ = config::Settings::from_env();
  if (timeout_s > 0) settings_.timeout_s = timeout_s;
  timeout_s_ = settings_.timeout_s;
  collectives::Overrides over = collectives::parse_overrides(settings_.algo);
  collectives::TuneParams params;
  params.forced = over.all;
  params.rules = std::move(over.rules);
  params.small_bytes = settings_.small_bytes;
  params.trials = settings_.tune_trials;
  tuner_ = collectives::Tuner(std::move(params), settings_.chunk_bytes);
  collectives::TuneParams& tune = tuner_.params();
  spin_ = settings_.spin;
  kernels::active();  // fail early on a CORAL_KERNEL this CPU lacks
  auto timeout = std::chrono::milliseconds(static_cast<long long>(timeout_s_.load() * 1000));

  transport::PeerInfo me{rank, static_cast<int>(getpid()), host_id()};
  const bool probe = settings_.tune_probe;
  const auto settings = schedule_settings(tune, settings_.chunk_bytes, probe, settings_.check_roots);
  // One record per rank: who it is, and the settings every rank must share.
  bootstrap::Record mine("peer record", rank);
  mine.add("nranks", nranks).add("pid", me.pid).add("host", me.host_id);
  cpu_set_t my_cpus;
  CPU_ZERO(&my_cpus);
  if (sched_getaffinity(0, sizeof my_cpus, &my_cpus) != 0) CPU_SET(0, &my_cpus);
  mine.add("cpus", &my_cpus, sizeof my_cpus);
  // Where this rank would serve a new rendezvous if a shrink makes it the root (shrink.cc): the
  // socket is bound now, since no store may be left to announce it then.
  rescue_ = std::make_shared<Rescue>();
  rescue_->listen_fd = net::listen_on(net::resolve("0.0.0.0", 0));
  rescue_->secret = bootstrap::wire::random_secret();
  mine.add("rescue", fmt::format("{}:{}", net::default_host_address(), net::local_address(rescue_->listen_fd).port()));
  mine.add("rescue secret", rescue_->secret.data(), rescue_->secret.size());
  std::vector<bootstrap::Agreed> agreed;
  for (const auto& [knob, value] : settings) {
    mine.add(knob, value);
    agreed.push_back({knob, knob});
  }
  bootstrap::Exchange exchange(*store_, prefix, rank, timeout);
  // Two processes that pass the same rank would overwrite each other's record, and the job would
  // wait for the rank nobody took: the second claim fails here, the first when it reads its own.
  const std::string claims = prefix + "/claims/" + std::to_string(rank);
  if (store_->add(claims, 1) > 1)
    fail(coralInvalidUsage, fmt::format("rank {} of {} is taken by another process already (this is pid {}): each "
                                        "process must pass its own rank",
                                        rank, nranks, me.pid));
  exchange.publish("info", mine);
  std::vector<transport::PeerInfo>& peers = peers_;
  peers.resize(nranks);
  cpu_set_t host_cpus;  // the union of the local ranks' affinity masks
  CPU_ZERO(&host_cpus);
  std::vector<PlaceInput> inputs(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    bootstrap::Record theirs;
    try {
      theirs = exchange.read("info", r, mine.what());
    } catch (const Error& e) {
      if (e.code() != coralTimeout || store_->add(claims, 0) < 2) throw;
      fail(coralInvalidUsage, fmt::format("{}; another process took rank {} too, so a rank is missing: each process "
                                          "must pass its own rank",
                                          e.what(), rank));
    }
    if (r == rank && (theirs.text("pid") != std::to_string(me.pid) || theirs.text("host") != me.host_id))
      fail(coralInvalidUsage, fmt::format("rank {} is also taken by pid {} on host {}: each process must pass its own "
                                          "rank",
                                          rank, theirs.text("pid"), theirs.text("host")));
    if (theirs.text("nranks") != std::to_string(nranks))
      fail(coralInvalidUsage, fmt::format("rank {} was initialised with nranks={} but rank {} with {}", r,
                                          theirs.text("nranks"), rank, nranks));
    bootstrap::check_agreed(mine, theirs, rank, agreed);
    peers[r] = {r, static_cast<int>(theirs.number("pid", 1, INT32_MAX)), theirs.text("host")};
    rescue_addrs_.push_back(theirs.text("rescue"));
    rescue_secrets_.emplace_back();
    theirs.bytes("rescue secret", rescue_secrets_.back().data(), rescue_secrets_.back().size());
    theirs.bytes("cpus", &inputs[r].cpus, sizeof inputs[r].cpus);
    if (theirs.text("host") == me.host_id) CPU_OR(&host_cpus, &host_cpus, &inputs[r].cpus);
  }
  std::map<std::string, int> host_ids;
  for (const auto& q : peers)
    host_index_.push_back(host_ids.emplace(q.host_id, static_cast<int>(host_ids.size())).first->second);
  place(exchange, inputs);

  std::vector<int> others;
  for (int q = 0; q < nranks; ++q)
    if (q != rank) others.push_back(q);
  host_ = transport::connect_all(
      {store_.get(), prefix, &peers, rank, others, timeout_s_.load(), placement_.nic[rank], placement_.rdma[rank]},
      transport::Memory::Host, collectives::kMinInFlight);
  // More ranks here than cores: a waiting rank yields at once, or the peer it waits for may not
  // get a core for a whole time slice. The cores are those of all local ranks together: a
  // launcher that binds each rank to a core of its own (mpirun does) is not oversubscribed.
  int local = 0;
  for (const auto& p : peers) local += p.host_id == me.host_id;
  const int ncpu = std::max(1, CPU_COUNT(&host_cpus));
  pause_polls_ = local > ncpu ? 0 : 1000;
  tune.single_host = local == nranks;
  tune.hosts = static_cast<int>(host_ids.size());
  start_flight();
  log::info(log::Init, "{} local ranks on {} cpus: {}", local, ncpu,
            pause_polls_ ? "spin, then yield" : "yield at once");
  p2p_seq_send_.assign(nranks, 0);
  p2p_seq_recv_.assign(nranks, 0);
  // Host-memory transports: the ranks of a host share its network interface.
  tune.nic_share = std::max(1, nranks / std::max(1, tune.hosts));
  // The NIC's speed from the topology, until the probe measures the links.
  if (placement_.nic_gbs > 0) tune.inter.beta = 1 / (placement_.nic_gbs * 1e9);
  if (tune.hosts > 1 && probe) probe_links();
  bootstrap::store_last_barrier(*store_, prefix + "/ready", rank, nranks, timeout);
  constructing_ = false;
  log::info(log::Init, "communicator ready: rank {} of {}", rank, nranks);
}

// Where the ranks sit and what follows (core/placement.h). One rank alone has nothing to plan.
void Communicator::place(bootstrap::Exchange& exchange, const std::vector<PlaceInput>& inputs) {
  if (nranks_ == 1) {
    placement_.ring = {0};
    placement_.device = placement_.nic = placement_.rdma = placement_.port = {""};
    placement_.numa = {-1};
    return;
  }
  placement_ = place_ranks(exchange, rank_, host_index_, inputs);
  ring_order_ = placement_.identity() ? nullptr : &placement_.ring;
  if (rank_ == 0) log::info(log::Topo, "{}", placement_.describe());
}

// The probe's strict ping-pong runs on this thread, as a collective does: through the engine
// each round trip would also time two hand-offs to the progress thread.
void Communicator::p2p(bool send, void* buf, size_t bytes, int peer) {
  Call c =
      make_call(send ? collectives::Coll::Send : collectives::Coll::Recv, buf, buf, bytes, coralUint8, coralSum, peer);
  wait_idle();
  std::lock_guard<std::mutex> lock(exec_mu_);
  execute(c);
}

// The cost model's link classes, measured: rank 0 times round trips (latency) and a stream of
// large messages (bandwidth) to a rank on its own host and to one on another host, then tells
// everyone. Defaults describe a 100 Gb/s network; a 1 Gb/s one picks different algorithms.
void Communicator::probe_links() {
  int near = -1, far = -1;
  for (int q = 1; q < nranks_; ++q) {
    if (host_index_[q] == host_index_[0] && near < 0) near = q;
    if (host_index_[q] != host_index_[0] && far < 0) far = q;
  }
  collectives::TuneParams& tune = tuner_.params();
  double result[4] = {tune.intra.alpha, tune.intra.beta, tune.inter.alpha, tune.inter.beta};
  const size_t big = std::min<size_t>(chunk_bytes(), 1u << 20);
  std::vector<std::byte> buf(big);
  auto measure = [&](int peer, double* out) {
    using C = std::chrono::steady_clock;
    const int rounds = 16, streams = 8;
    if (rank_ == 0) {
      p2p(true, buf.data(), 8, peer);  // warm-up: connections and caches
      p2p(false, buf.data(), 8, peer);
      auto t0 = C::now();
      for (int i = 0; i < rounds; ++i) {
        p2p(true, buf.data(), 8, peer);
        p2p(false, buf.data(), 8, peer);
      }
      double alpha = std::chrono::duration<double>(C::now() - t0).count() / (2 * rounds);
      t0 = C::now();
      for (int i = 0; i < streams; ++i) p2p(true, buf.data(), big, peer);
      p2p(false, buf.data(), 1, peer);
      double t = std::chrono::duration<double>(C::now() - t0).count();
      out[0] = alpha;
      out[1] = std::max(t - 2 * alpha, 1e-9) / (static_cast<double>(streams) * big);
    } else if (rank_ == peer) {
      p2p(false, buf.data(), 8, 0);
      p2p(true, buf.data(), 8, 0);
      for (int i = 0; i < rounds; ++i) {
        p2p(false, buf.data(), 8, 0);
        p2p(true, buf.data(), 8, 0);
      }
      for (int i = 0; i < streams; ++i) p2p(false, buf.data(), big, 0);
      p2p(true, buf.data(), 1, 0);
    }
  };
  if (near > 0) measure(near, result);
  if (far > 0) measure(far, result + 2);
  run(make_call(collectives::Coll::Broadcast, result, result, 4, coralFloat64, coralSum, 0));
  tune.intra = {result[0], result[1]};
  tune.inter = {result[2], result[3]};
  log::info(log::Tune, "probed links: inside a host {:.1f} us, {:.2f} GB/s; between hosts {:.1f} us, {:.2f} GB/s",
            result[0] * 1e6, 1e-9 / result[1], result[2] * 1e6, 1e-9 / result[3]);
}

// queue_, the last member, goes first: it runs what is queued and joins its thread.
Communicator::~Communicator() = default;

void Communicator::agree(collectives::Trial& trial, const collectives::CollArgs& args, bool background) {
  std::vector<double> mine = trial.scores(), all(mine.size());
  // Max: exact in any order, so every rank decides from the same numbers.
  Call c = make_call(collectives::Coll::AllReduce, mine.data(), all.data(), mine.size(), coralFloat64, coralMax, 0);
  {
    // The agreement is no trial's call, whatever its size (CORAL_SMALL_BYTES may be 0).
    Override<bool> agreeing(agreeing_, true);
    execute(c, background);
  }
  tuner_.settle(trial, all, args);
}

Communicator::Cached& Communicator::schedule_for(const collectives::CollArgs& a, collectives::Algo algo) {
  auto key = std::make_tuple(static_cast<int>(a.coll), a.count, static_cast<int>(a.dtype), static_cast<int>(a.op),
                             a.root, static_cast<int>(algo), a.chunk, a.in_place);
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    if (cache_.size() > 256) cache_.clear();
    it = cache_.emplace(key, Cached{collectives::build(a, algo), a.chunk, {}, algo}).first;
  }
  return it->second;
}

void Communicator::check_usable() const {
  if (failed_.load(std::memory_order_acquire) == coralSuccess) return;  // no lock on the hot path
  std::lock_guard<std::mutex> lock(state_mu_);
  if (failed_ != coralSuccess) fail(failed_, "communicator is unusable after an earlier failure: " + failure_);
}

// Ranks that pass different roots would each run another rank's tree: some return at once,
// others wait for data that never comes. One 8-byte all-reduce of (root, ~root) under max
// tells every rank whether all roots agree, and which two differ.
void Communicator::agree_root(const collectives::CollArgs& a, bool background) {
  uint32_t mine[2] = {static_cast<uint32_t>(a.root), ~static_cast<uint32_t>(a.root)}, all[2];
  Call c = make_call(collectives::Coll::AllReduce, mine, all, 2, coralUint32, coralMax, 0);
  {
    Override<bool> agreeing(agreeing_, true);
    Override<int> checking(root_check_of_, static_cast<int>(a.coll));
    execute(c, background);
  }
  if (all[0] != ~all[1])
    fail(coralInvalidUsage, fmt::format("rank {}: {} #{}: ranks passed different roots, {} and {} (this rank "
                                        "passed {}); every rank must pass the same root",
                                        rank_, collectives::coll_name(a.coll), user_seq_ + 1, ~all[1], all[0], a.root));
}

void Communicator::execute(Call& c, bool background, bool device) {
  check_usable();
  collectives::CollArgs& a = c.args;
  place(a);
  if (nranks_ > 1 && rooted(a.coll) && settings_.check_roots && !agreeing_) agree_root(a, background);
  if (c.premul.on) {
    if (device) fail(coralInternalError, "a device PreMulSum call reached the executor unscaled");
    prescale(c);
  }
  const size_t es = kernels::dtype_size(a.dtype);
  // Training loops repeat one call: its algorithm, chunk and schedule are looked up once.
  const size_t max_bytes = device ? gpu_->chunk_bytes : chunk_bytes();
  const CallKey key = call_key(a, max_bytes);
  collectives::Trial* trial = nullptr;
  if (a.v) {
    // A v-collective's schedule depends on its counts: built for this call alone.
    const collectives::Decision d = tuner_.decide(a, max_bytes, false);
    a.chunk = d.chunk;
    v_cached_ = Cached{collectives::build(a, d.algo), a.chunk, {}, d.algo};
    last_ = nullptr;
  } else if (!last_ || key != last_key_) {
    const collectives::Decision d = tuner_.decide(a, max_bytes, !device && !agreeing_);
    trial = d.trial;
    a.chunk = d.chunk;
    last_ = &schedule_for(a, d.algo);
    last_key_ = key;
  }
  Cached& cached = a.v ? v_cached_ : *last_;
  // A trial's next call may run another candidate: this one is not the shape's for good.
  if (trial || a.v) last_ = nullptr;
  a.chunk = cached.chunk;
  uint64_t salt;
  if (a.coll == collectives::Coll::Send)
    salt = p2p_seq_send_[a.root]++;
  else if (a.coll == collectives::Coll::Recv)
    salt = p2p_seq_recv_[a.root]++;
  else
    // A v-collective's count is this rank's own and differs between ranks: its signature counts.
    salt = coll_seq_++ * 1000003u + (a.v ? v_signature(a) : a.count * 31u) + static_cast<uint64_t>(a.root);
  // Point-to-point messages match a Send with a Recv, whatever their dtypes.
  collectives::Coll tag_coll = a.coll == collectives::Coll::Recv ? collectives::Coll::Send : a.coll;
  const bool p2p = is_p2p(c);
  uint64_t tag = make_tag(tag_coll, p2p ? coralUint8 : a.dtype, p2p ? coralSum : a.op, salt);
  // A root check's tag names the call it precedes, so that a peer in another call (an
  // all-reduce, or a broadcast where this rank reduces) is told what this rank runs.
  if (root_check_of_ >= 0) tag = root_check_tag(static_cast<collectives::Coll>(root_check_of_), tag);
  const collectives::Schedule& s = cached.schedule;
  if (!device && !cached.plan.links) cached.plan = compile(s, host_.links, es);
  // The progress thread polls only briefly before sleeping: the core it would burn belongs to the
  // caller's computation, which is what non-blocking calls exist to overlap.
  PeerMonitor mon(rank_, device ? gpu_->domain_of.data() : host_.domain_of.data(), host_.polled, timeout_s_.load(),
                  background ? std::min(spin_, kBackgroundSpin) : spin_,
                  background ? std::min(pause_polls_, kBackgroundSpin) : pause_polls_, host_.cpu_gate, flight_peers_,
                  &usable_);
  // Users count their own calls: Coral's internal ones (the start-up probe, root and tuner
  // agreements) are marked, and numbered after the user's call they follow.
  const bool internal = agreeing_ || constructing_;
  const uint32_t kind = flight_kind(a.coll, a.dtype, a.op, cached.algo) | (internal && !p2p ? kFlightInternal : 0);
  flight_->start(kind,
                 a.coll == collectives::Coll::Send   ? p2p_seq_send_[a.root]
                 : a.coll == collectives::Coll::Recv ? p2p_seq_recv_[a.root]
                 : internal                          ? user_seq_
                                                     : ++user_seq_,
                 a.count, s.steps.size());
  mon.tag = tag;
  if (background) {
    mon.callers_waiting = &callers_waiting_;
    mon.eager_spin = spin_;
    mon.eager_pause_polls = pause_polls_;
  }
  const auto start = trial ? Clock::now() : Clock::time_point{};
  try {
    void* scratch;
    std::unique_ptr<gpu::CudaMemOps> mem;
    if (device) {
      scratch = gpu_->scratch.get(s.scratch_elems * es);
      mem = std::make_unique<gpu::CudaMemOps>(gpu_->stream.get(), a.dtype, a.op, gpu_limit());
    } else {
      if (scratch_.size() < s.scratch_elems * es) scratch_.resize(s.scratch_elems * es);
      scratch = scratch_.data();
    }
    coral::execute(s, ExecArgs{c.send, c.recv, scratch, a.dtype, a.op, nranks_, tag,
                               device ? &gpu_->links : &host_.links, &mon, mem.get(), device ? nullptr : &cached.plan});
    if (!device)
      for (auto& d : host_.domains) d->drain(mon);
  } catch (const Error& e) {
    std::string msg = fmt::format("rank {}: {}", rank_, e.what());
    record_failure(e.code(), msg);
    end_flight(e.code(), mon.published(), msg);
    fail(e.code(), msg);
  }
  end_flight(coralSuccess, mon.published(), "");
  if (trial && tuner_.record(*trial, std::chrono::duration<double>(Clock::now() - start).count()))
    agree(*trial, a, background);
}

void Communicator::record_failure(coralResult_t code, const std::string& msg) {
  abort(msg);
  std::lock_guard<std::mutex> lock(state_mu_);
  failure_ = msg;
  failed_ = code;
  last_error_ = msg;  // coralGetLastError names a failure that surfaced only asynchronously
}

void Communicator::abort(const std::string& why) {
  for (auto& d : host_.domains) d->abort(why);
  if (gpu_ && gpu_->ipc) gpu_->ipc->abort(why);
  std::lock_guard<std::mutex> lock(state_mu_);
  if (failed_ == coralSuccess) {
    failure_ = why;
    failed_ = coralRemoteError;
  }
}

coralResult_t Communicator::async_error() const {
  std::lock_guard<std::mutex> lock(state_mu_);
  return failed_;
}

std::string Communicator::last_error() const {
  std::lock_guard<std::mutex> lock(state_mu_);
  return last_error_;
}

void Communicator::set_last_error(const std::string& msg) {
  std::lock_guard<std::mutex> lock(state_mu_);
  last_error_ = msg;
}

void Communicator::wait_idle() {
  callers_waiting_.fetch_add(1, std::memory_order_relaxed);
  queue_.wait_idle();
  callers_waiting_.fetch_sub(1, std::memory_order_relaxed);
}

void Communicator::run(Call call) {
  if (is_p2p(call)) {
    // Through the point-to-point engine, so that a send posted earlier with coralISend, or the
    // peer's, cannot hold this one up (batch.cc).
    submit(call)->wait_ok();
    return;
  }
  wait_idle();
  std::lock_guard<std::mutex> lock(exec_mu_);
  execute(call);
}

std::shared_ptr<Request> Communicator::submit(Call call) {
  auto req = std::make_shared<Request>();
  req->call = call;
  req->callers_waiting = &callers_waiting_;
  queue_.submit(req);
  return req;
}

void Communicator::run_queued(std::shared_ptr<Request>& req) {
  if (!req->ready && (!req->group.empty() || is_p2p(req->call))) {
    run_batch(req);
    req.reset();
    return;
  }
  // Declared before the request is dropped, so that dropping it (its event) is inside it too.
  std::optional<gpu::ProgressScope> scope;
  if (req->ready) scope.emplace(&gpu_->flag);
  coralResult_t rc = coralSuccess;
  std::string err;
  try {
    std::lock_guard<std::mutex> lock(exec_mu_);
    if (req->ready)
      run_stream_call(*req);
    else
      execute(req->call, true);
  } catch (const Error& e) {
    rc = e.code();
    err = e.what();
  } catch (const std::exception& e) {
    rc = coralInternalError;
    err = e.what();
  }
  req->finish(rc, err);
  req.reset();
}

}  // namespace coral
