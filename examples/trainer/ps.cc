// The parameter-server mode (ps.h says what it is). Every message carries a 16-byte header
// then one shard's values: a push {version seen, samples} + gradient, a reply {version} +
// parameters. Each (worker, server) pair has one message in flight each way at a time, so one
// posted receive per worker on a server, and one buffer each way, suffice.
#include "ps.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "common.h"
#include "optim.h"
#include "report.h"
#include "sampler.h"

namespace trainer {
namespace {

constexpr size_t kHeader = 16;

template <class T>
class PsRun {
 public:
  PsRun(const Config& cfg, coral::communicator& comm);
  Result run();

 private:
  bool server() const { return rank_ < servers_; }
  size_t lo(int s) const { return n_ * static_cast<size_t>(s) / static_cast<size_t>(servers_); }
  size_t len(int s) const { return lo(s + 1) - lo(s); }
  size_t msg_bytes(int s) const { return kHeader + len(s) * sizeof(T); }
  // What a worker pushes per step, headers included (and pulls as much back).
  size_t bytes_per_step() const { return n_ * sizeof(T) + kHeader * static_cast<size_t>(servers_); }
  void serve(int64_t steps);
  void work(size_t steps);
  void finish_epoch();

  const Config& cfg_;
  coral::communicator& comm_;
  int rank_, size_, servers_, workers_;
  Data data_;
  Mlp<T> model_;
  size_t n_;
  std::vector<T> params_, grad_;
  Sampler sampler_;
  Report report_;
  int64_t worker_batch_;
  // Server: its optimizer, book and one buffer each way per worker.
  Optimizer<T> opt_;
  PsBook book_;
  std::vector<std::vector<unsigned char>> in_, out_;
  // Worker: the version of each shard it last received.
  std::vector<int64_t> seen_;
  double loss_ = 0, samples_ = 0, wait_s_ = 0;
};

template <class T>
PsRun<T>::PsRun(const Config& cfg, coral::communicator& comm)
    : cfg_(cfg),
      comm_(comm),
      rank_(comm.rank()),
      size_(comm.size()),
      servers_(cfg.servers),
      workers_(comm.size() - cfg.servers),
      data_(load_data(cfg)),
      model_(Layout(model_dims(cfg, data_))),
      n_(model_.layout().nparams),
      params_(n_),
      grad_(n_),
      sampler_(data_.train.size(), static_cast<size_t>(cfg.batch), cfg.seed),
      report_(rank_ == 0, cfg.csv, cfg.plot),
      worker_batch_((cfg.batch + std::max(workers_, 1) - 1) / std::max(workers_, 1)),
      opt_(cfg.optim, server() ? len(rank_) : 0),
      book_(std::max(workers_, 1), cfg.max_staleness),
      seen_() {
  if (workers_ < 1)
    throw std::invalid_argument(
        fmt::format("--mode ps --servers {} needs more than {} ranks: at least one worker", cfg.servers, cfg.servers));
  seen_.assign(static_cast<size_t>(servers_), 0);
  if (cfg.slow.rank >= 0 && (cfg.slow.rank < servers_ || cfg.slow.rank >= size_))
    throw std::invalid_argument(
        fmt::format("--mode ps --slow-rank {}: the workers are ranks {} to {}", cfg.slow.rank, servers_, size_ - 1));
  if (static_cast<size_t>(servers_) > n_) throw std::invalid_argument("--servers is larger than the model");
  // A server's buffers all hold its own shard; a worker's one per server.
  for (int peer = 0; peer < (server() ? workers_ : servers_); peer++) {
    in_.emplace_back(msg_bytes(server() ? rank_ : peer));
    out_.emplace_back(msg_bytes(server() ? rank_ : peer));
  }
}

// Applies pushes as they come until every worker has pushed `steps` times, replying as the
// staleness bound allows.
template <class T>
void PsRun<T>::serve(int64_t steps) {
  const size_t W = static_cast<size_t>(workers_), L = len(rank_);
  T* shard = params_.data() + lo(rank_);
  std::vector<coralRequest_t> recv(W, nullptr), send(W, nullptr);
  std::vector<int64_t> left(W, steps);
  std::vector<bool> owed(W, false);
  coralComm_t c = comm_.get();
  auto post = [&](size_t w) {
    coral::check(coralIRecv(in_[w].data(), in_[w].size(), coralUint8, servers_ + static_cast<int>(w), c, &recv[w]), c);
  };
  for (size_t w = 0; w < W; w++)
    if (left[w] > 0) post(w);
  for (;;) {
    for (size_t w = 0; w < W; w++) {  // the replies the staleness bound now allows
      if (!owed[w] || !book_.may_reply(static_cast<int>(w))) continue;
      if (send[w]) coral::check(coralWait(send[w]), c);
      const int64_t head[2] = {book_.version(), 0};
      std::memcpy(out_[w].data(), head, sizeof head);
      std::memcpy(out_[w].data() + kHeader, shard, L * sizeof(T));
      coral::check(coralISend(out_[w].data(), out_[w].size(), coralUint8, servers_ + static_cast<int>(w), c, &send[w]),
                   c);
      owed[w] = false;
    }
    // Asleep until some worker's push lands: the workers share the cores with us.
    int got = -1;
    coral::check(coralWaitAny(static_cast<int>(W), recv.data(), &got), c);
    if (got < 0) {  // every push is in
      if (std::find(owed.begin(), owed.end(), true) != owed.end())
        throw std::logic_error("parameter server: replies still held back with every push in");
      break;
    }
    const size_t w = static_cast<size_t>(got);
    int64_t head[2];
    std::memcpy(head, in_[w].data(), sizeof head);
    book_.push(static_cast<int>(w), head[0], head[1] > 0);
    if (head[1] > 0) opt_.step(shard, reinterpret_cast<T*>(in_[w].data() + kHeader), worker_batch_);
    owed[w] = true;
    if (--left[w] > 0) post(w);  // the worker sends again only after our reply
  }
  for (coralRequest_t r : send)
    if (r) coral::check(coralWait(r), c);
}

// The epoch's first `steps` batches: compute, push to every server, wait for the replies.
template <class T>
void PsRun<T>::work(size_t steps) {
  const int me = rank_ - servers_;
  coralComm_t c = comm_.get();
  std::vector<T> x;
  std::vector<int32_t> y;
  std::vector<coralRequest_t> reqs;
  for (size_t step = 0; step < steps; step++) {
    const std::vector<uint32_t> idx = sampler_.shard(step, me, workers_);
    gather(data_.train, idx, &x, &y);
    const T scale = T(1) / static_cast<T>(std::max<size_t>(idx.size(), 1));  // each push is one mean
    const auto c0 = Clock::now();
    loss_ += model_.loss_grad(params_.data(), x.data(), y.data(), static_cast<int>(idx.size()), scale, grad_.data());
    slow_down(cfg_.slow, rank_, c0);
    samples_ += static_cast<double>(idx.size());
    const auto t0 = Clock::now();
    reqs.assign(2 * static_cast<size_t>(servers_), nullptr);
    for (int s = 0; s < servers_; s++) {
      std::vector<unsigned char>& out = out_[static_cast<size_t>(s)];
      const int64_t head[2] = {seen_[static_cast<size_t>(s)], static_cast<int64_t>(idx.size())};
      std::memcpy(out.data(), head, sizeof head);
      std::memcpy(out.data() + kHeader, grad_.data() + lo(s), len(s) * sizeof(T));
      coral::check(coralISend(out.data(), out.size(), coralUint8, s, c, &reqs[2 * static_cast<size_t>(s)]), c);
      std::vector<unsigned char>& in = in_[static_cast<size_t>(s)];
      coral::check(coralIRecv(in.data(), in.size(), coralUint8, s, c, &reqs[2 * static_cast<size_t>(s) + 1]), c);
    }
    coralResult_t first_rc = coralSuccess;
    for (coralRequest_t r : reqs) {
      coralResult_t rc = coralWait(r);
      if (first_rc == coralSuccess) first_rc = rc;
    }
    coral::check(first_rc, c);
    for (int s = 0; s < servers_; s++) {
      const std::vector<unsigned char>& in = in_[static_cast<size_t>(s)];
      std::memcpy(&seen_[static_cast<size_t>(s)], in.data(), sizeof(int64_t));
      std::memcpy(params_.data() + lo(s), in.data() + kHeader, len(s) * sizeof(T));
    }
    wait_s_ += since(t0);
  }
}

// Collective: every rank gets the servers' shards and versions, so all evaluate one model.
template <class T>
void PsRun<T>::finish_epoch() {
  std::vector<size_t> counts(static_cast<size_t>(size_), 0), displs(static_cast<size_t>(size_), n_);
  for (int s = 0; s < servers_; s++) {
    counts[static_cast<size_t>(s)] = len(s);
    displs[static_cast<size_t>(s)] = lo(s);
  }
  std::vector<T> all(n_);
  const size_t mine = server() ? len(rank_) : 0;
  const T* from = server() ? params_.data() + lo(rank_) : params_.data();
  coral::check(coralAllGatherv(from, mine, all.data(), counts.data(), displs.data(), coral::datatype_of<T>(),
                               comm_.get(), nullptr),
               comm_.get());
  params_ = std::move(all);
  std::vector<int64_t> versions(static_cast<size_t>(servers_), 0);
  if (server()) versions[static_cast<size_t>(rank_)] = book_.version();
  comm_.all_reduce(std::span<int64_t>(versions), coralMax);
  seen_ = versions;
}

template <class T>
Result PsRun<T>::run() {
  report_.line(fmt::format(
      "coral-train: {} ({} train / {} test), model {} ({} parameters, {}), parameter servers: {} server{} and {} "
      "worker{}, global batch {} ({} per worker push), {} lr {:g}, staleness bound {}",
      data_.name, data_.train.size(), data_.test.size(), dims_text(model_.layout()), n_,
      sizeof(T) == 8 ? "float64" : "float32", servers_, servers_ == 1 ? "" : "s", workers_, workers_ == 1 ? "" : "s",
      cfg_.batch, worker_batch_, cfg_.optim.kind == OptimKind::Adam ? "adam" : "sgd", cfg_.optim.lr,
      cfg_.max_staleness < 0 ? std::string("none") : std::to_string(cfg_.max_staleness)));
  if (rank_ == 0) model_.init(params_.data(), cfg_.seed);
  comm_.broadcast(std::span<T>(params_), 0);
  const int64_t spe = static_cast<int64_t>(sampler_.steps_per_epoch());
  int64_t total = cfg_.epochs * spe;
  if (cfg_.max_steps > 0) total = std::min(total, cfg_.max_steps);
  Result r;
  double train_s = 0;
  for (int64_t gstep = 0, epoch = 0; gstep < total; epoch++) {
    const int64_t steps = std::min(spe, total - gstep);
    sampler_.start_epoch(epoch);
    const auto t0 = Clock::now();
    const double loss0 = loss_, samples0 = samples_, wait0 = wait_s_;
    if (server())
      serve(steps);
    else
      work(static_cast<size_t>(steps));
    const double seconds = since(t0);
    train_s += seconds;
    gstep += steps;
    double sums[3] = {loss_ - loss0, samples_ - samples0, wait_s_ - wait0};
    comm_.all_reduce(std::span<double>(sums));
    double slowest[1] = {seconds};
    comm_.all_reduce(std::span<double>(slowest), coralMax);
    finish_epoch();
    report_.step({epoch, cfg_.epochs, steps - 1, spe, gstep, sums[1] > 0 ? sums[0] / sums[1] : 0, sums[1] / slowest[0],
                  100 * sums[2] / workers_ / slowest[0]});
    evaluate(model_, params_.data(), data_.test, comm_, &r.test_loss, &r.test_accuracy);
    report_.epoch(epoch, r.test_loss, r.test_accuracy, seconds, train_s,
                  static_cast<double>(gstep) * static_cast<double>(bytes_per_step()));
    r.steps = gstep;
  }
  // Staleness over every applied gradient of every server.
  int64_t st[2] = {server() ? book_.count() : 0, server() ? book_.staleness_sum() : 0};
  comm_.all_reduce(std::span<int64_t>(st));
  int64_t worst[1] = {server() ? book_.staleness_max() : 0};
  comm_.all_reduce(std::span<int64_t>(worst), coralMax);
  double totals[3] = {samples_, wait_s_, train_s};
  comm_.all_reduce(std::span<double>(totals, 2));
  comm_.all_reduce(std::span<double>(totals + 2, 1), coralMax);
  r.seconds = totals[2];
  r.samples_per_s = r.seconds > 0 ? totals[0] / r.seconds : 0;
  r.comm_wait_pct = r.seconds > 0 ? 100 * totals[1] / workers_ / r.seconds : 0;
  r.bytes_per_step = static_cast<double>(bytes_per_step());
  report_.line(fmt::format(
      "final: test accuracy {:.2f}% test loss {:.4f} after {} steps; {:.1f} s training, {:.0f} samples/s, workers "
      "waited {:.1f}% for servers, {:.1f} KiB sent/step (and as much pulled); staleness of {} applied gradients: "
      "mean {:.2f}, max {}",
      100 * r.test_accuracy, r.test_loss, r.steps, r.seconds, r.samples_per_s, r.comm_wait_pct, r.bytes_per_step / 1024,
      st[0], st[0] > 0 ? static_cast<double>(st[1]) / static_cast<double>(st[0]) : 0.0, worst[0]));
  if (rank_ == 0 && !cfg_.dump_params.empty()) dump_params(cfg_.dump_params, params_);
  report_.finish();
  return r;
}

}  // namespace

template <class T>
Result train_ps(const Config& cfg, coral::communicator& comm) {
  return PsRun<T>(cfg, comm).run();
}

template Result train_ps<float>(const Config&, coral::communicator&);
template Result train_ps<double>(const Config&, coral::communicator&);

}  // namespace trainer
