#include "trainer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <stdexcept>

#include "checkpoint.h"
#include "common.h"
#include "data.h"
#include "elastic.h"
#include "mlp.h"
#include "report.h"
#include "sampler.h"

namespace trainer {
namespace {

template <class T>
class Loop {
 public:
  Loop(const Config& cfg, coral::communicator& comm)
      : cfg_(cfg),
        comm_(comm),
        rank_(comm.rank()),
        size_(comm.size()),
        data_(load_data(cfg)),
        model_(Layout(dims())),
        params_(model_.layout().nparams),
        opt_(cfg.optim, params_.size()),
        sync_(comm.get(), model_.layout(), static_cast<size_t>(cfg.bucket_mb * (1 << 20)), cfg.wire, cfg.staleness + 1),
        grads_(static_cast<size_t>(cfg.staleness) + 1, std::vector<T>(params_.size())),
        sampler_(data_.train.size(), static_cast<size_t>(cfg.batch), cfg.seed),
        report_(rank_ == 0, cfg.csv, cfg.plot),
        balancer_(cfg.balance ? cfg.balance_every : 0) {
    for (int r = 0; r < size_; r++) world_.push_back(r);
    fail_ranks_ = cfg.fail_ranks.empty() ? std::vector<int>{size_ - 1} : cfg.fail_ranks;
    if (rank_ == 0) check_outputs(cfg);
    for (int r : fail_ranks_)
      if (r < 0 || r >= size_)
        throw std::invalid_argument(fmt::format("--fail-rank {}: the ranks are 0 to {}", r, size_ - 1));
    if (cfg.slow.rank >= size_)
      throw std::invalid_argument(fmt::format("--slow-rank {}: there are only {} ranks", cfg.slow.rank, size_));
    // One bucket starts only when backward has ended: there is nothing to overlap, and handing
    // it to the progress thread costs two wake-ups a step.
    sync_.set_blocking(cfg.staleness == 0 && (!cfg.overlap || sync_.buckets() == 1));
    shard_ = use_shards(cfg, size_, sync_.blocking());
    if (shard_) {
      sync_.set_blocking(true);
      sync_.set_shards(rank_, size_);
    }
    sync_.compress(cfg.compress, model_.layout(), cfg.seed);
  }

  Result run();

 private:
  std::vector<int> dims() const { return model_dims(cfg_, data_); }
  void start();
  void resume();
  void save(int64_t gstep);
  void step(int64_t gstep, size_t s);
  void apply(int64_t gstep);
  void log(int64_t epoch, size_t s, int64_t gstep);
  void rebalance(int64_t gstep);
  void check_replicas(const char* when);
  int64_t recover(const coral::error& why, int64_t gstep);
  bool fails_here(int64_t gstep) const;

  const Config& cfg_;
  coral::communicator& comm_;
  int rank_, size_;
  Data data_;
  Mlp<T> model_;
  std::vector<T> params_;
  Optimizer<T> opt_;
  GradSync<T> sync_;
  std::vector<std::vector<T>> grads_;  // one per in-flight step (staleness + 1)
  Sampler sampler_;
  Report report_;
  Balancer balancer_;
  std::vector<size_t> shown_parts_;  // --balance: the split last printed
  std::vector<T> xb_;
  std::vector<int32_t> yb_;
  int64_t start_step_ = 0;
  bool shard_ = false;           // --shard-optimizer: this rank updates only its slice
  int64_t applied_ = -1;         // the last global step whose gradient the optimizer took
  std::vector<int> world_;       // --elastic: each rank's rank in the job's first communicator
  std::vector<int> fail_ranks_;  // --fail-at-step: the first ranks that die then
  // --elastic: what the failed step waited, kept out of "comm wait" (the recovery is reported
  // on its own line).
  double step_wait0_ = 0, lost_wait_ = 0;
  // Since the last log line: local loss sum and samples, global samples, wait and wall time.
  double win_loss_ = 0, win_n_ = 0, win_global_ = 0, win_wait0_ = 0;
  Clock::time_point win_t0_;
  double train_s_ = 0;
  int64_t samples_ = 0;
  // This rank's communication wait of each step since the last log line, and the part of all
  // waits that no rank escaped: the last rank to arrive still waits for the data to move, so
  // the per-step minimum over ranks is the network's share and the rest waits for slower ranks.
  std::vector<double> step_waits_;
  double shard_waits_[2] = {0, 0};  // the last step's reduce-scatter and all-gather waits
  double network_s_ = 0;
};

template <class T>
void Loop<T>::start() {
  const Layout& l = model_.layout();
  std::string extras;
  if (cfg_.staleness) extras += fmt::format(", staleness {}", cfg_.staleness);
  if (cfg_.compress.kind != Compression::None) extras += ", compress " + to_string(cfg_.compress);
  if (cfg_.slow.rank >= 0) extras += fmt::format(", rank {} slowed {:g}x", cfg_.slow.rank, cfg_.slow.factor);
  if (cfg_.balance) extras += fmt::format(", balance every {} steps", cfg_.balance_every);
  if (shard_) extras += fmt::format(", optimizer sharded over {} rank{}", size_, size_ == 1 ? "" : "s");
  report_.line(fmt::format(
      "coral-train: {} ({} train / {} test), model {} ({} parameters, {}), {} rank{}, global batch "
      "{}, {} lr {:g} (scaled to {:g}), {} bucket{}, overlap {}, grad comm {}{}",
      data_.name, data_.train.size(), data_.test.size(), dims_text(l), l.nparams,
      sizeof(T) == 8 ? "float64" : "float32", size_, size_ == 1 ? "" : "s", cfg_.batch,
      cfg_.optim.kind == OptimKind::Adam ? "adam" : "sgd", cfg_.optim.lr,
      learning_rate(cfg_.optim, cfg_.optim.warmup, cfg_.batch), sync_.buckets(), sync_.buckets() == 1 ? "" : "s",
      cfg_.overlap && !sync_.blocking()      ? "on"
      : sync_.buckets() == 1 && cfg_.overlap ? "off (one bucket)"
                                             : "off",
      cfg_.wire == Wire::Same   ? (sizeof(T) == 8 ? "fp64" : "fp32")
      : cfg_.wire == Wire::Bf16 ? "bf16"
                                : "fp16",
      extras));
  // Rank 0 initialises, everyone else receives the same parameters.
  if (rank_ == 0) model_.init(params_.data(), cfg_.seed);
  comm_.broadcast(std::span<T>(params_), 0);
  if (!cfg_.resume.empty()) resume();
}

template <class T>
void Loop<T>::resume() {
  Checkpoint<T> c;
  std::string why;
  if (rank_ == 0) {
    try {
      c = load_checkpoint<T>(cfg_.resume);
      if (c.dims != model_.layout().dims)
        why = "it was written for another model (--hidden)";
      else if (c.optimizer != static_cast<uint32_t>(cfg_.optim.kind))
        why = "it was written with another --optimizer";
      else if (c.global_batch != cfg_.batch)
        why = fmt::format("it was written with global batch {}, not {}", c.global_batch, cfg_.batch);
      else if (c.seed != cfg_.seed)
        why = fmt::format("it was written with --seed {}, not {}", c.seed, cfg_.seed);
    } catch (const std::exception& e) {
      why = e.what();
    }
  }
  // Every rank reports rank 0's reason: whichever exits first, the message is the real one.
  int64_t meta[3] = {static_cast<int64_t>(why.size()), c.global_step, c.optimizer_steps};
  comm_.broadcast(std::span<int64_t>(meta), 0);
  if (meta[0] > 0) {
    why.resize(static_cast<size_t>(meta[0]));
    comm_.broadcast(std::span<uint8_t>(reinterpret_cast<uint8_t*>(why.data()), why.size()), 0);
    throw std::runtime_error(fmt::format("cannot resume from {}: {}", cfg_.resume, why));
  }
  if (rank_ == 0) {
    params_ = std::move(c.params);
    opt_.m() = std::move(c.m);
    if (!c.v.empty()) opt_.v() = std::move(c.v);
  }
  comm_.broadcast(std::span<T>(params_), 0);
  comm_.broadcast(std::span<T>(opt_.m()), 0);
  if (!opt_.v().empty()) comm_.broadcast(std::span<T>(opt_.v()), 0);
  start_step_ = meta[1];
  opt_.steps_ref() = meta[2];
  report_.line(fmt::format("resumed from {} at step {}", cfg_.resume, start_step_));
}

template <class T>
void Loop<T>::save(int64_t gstep) {
  if (cfg_.checkpoint.empty()) return;
  // Sharded, each rank's moments are current only on its slice: rank 0 collects them.
  if (shard_) {
    sync_.all_gather(opt_.m().data(), false);
    if (!opt_.v().empty()) sync_.all_gather(opt_.v().data(), false);
  }
  if (rank_ != 0) return;
  Checkpoint<T> c{model_.layout().dims,
                  static_cast<uint32_t>(cfg_.optim.kind),
                  gstep,
                  opt_.steps(),
                  cfg_.batch,
                  cfg_.seed,
                  params_,
                  opt_.m(),
                  opt_.v()};
  save_checkpoint(cfg_.checkpoint, c);
}

// Applies the averaged gradient of step gstep (waiting for its all-reduce).
template <class T>
void Loop<T>::apply(int64_t gstep) {
  int slot = static_cast<int>(gstep % (cfg_.staleness + 1));
  T* g = grads_[static_cast<size_t>(slot)].data();
  if (shard_) {
    const double w0 = sync_.wait_seconds();
    sync_.reduce_scatter(g);
    const double w1 = sync_.wait_seconds();
    const size_t lo = sync_.shard_begin();
    opt_.step(params_.data(), g + lo, cfg_.batch, lo, sync_.shard_end());
    sync_.all_gather(params_.data());
    shard_waits_[0] = w1 - w0;
    shard_waits_[1] = sync_.wait_seconds() - w1;
  } else {
    sync_.wait(slot);
    opt_.step(params_.data(), g, cfg_.batch);
  }
  applied_ = gstep;
}

template <class T>
bool Loop<T>::fails_here(int64_t gstep) const {
  if (gstep != cfg_.fail_at_step) return false;
  return std::find(fail_ranks_.begin(), fail_ranks_.end(), world_[static_cast<size_t>(rank_)]) != fail_ranks_.end();
}

// A collective failed at global step gstep under --elastic: the survivors shrink to themselves,
// take the most advanced replica (a rank that died mid all-reduce may have let some survivors
// finish the step), and go on from the step after it with the same global batch: the sampler
// splits the rest of the epoch among the ranks left, so no sample is skipped or seen twice.
template <class T>
int64_t Loop<T>::recover(const coral::error& why, int64_t gstep) {
  const auto t0 = Clock::now();
  sync_.reset(comm_.get());
  lost_wait_ += sync_.wait_seconds() - step_wait0_;
  const std::vector<int> lost = shrink_to_survivors(comm_, world_, why);
  rank_ = comm_.rank();
  size_ = comm_.size();
  sync_.reset(comm_.get());
  if (rank_ == 0) report_.take_over();
  int64_t best[1] = {applied_};
  comm_.all_reduce(std::span<int64_t>(best), coralMax);
  int64_t source[1] = {applied_ == best[0] ? rank_ : size_};
  comm_.all_reduce(std::span<int64_t>(source), coralMin);
  const int src = static_cast<int>(source[0]);
  int64_t steps[1] = {opt_.steps()};
  comm_.broadcast(std::span<T>(params_), src);
  comm_.broadcast(std::span<T>(opt_.m()), src);
  if (!opt_.v().empty()) comm_.broadcast(std::span<T>(opt_.v()), src);
  comm_.broadcast(std::span<int64_t>(steps), src);
  opt_.steps_ref() = steps[0];
  applied_ = best[0];
  sampler_.set_weights({});
  balancer_.reset();
  // The interval's statistics were per rank and step: start a new one.
  step_waits_.clear();
  win_loss_ = win_n_ = win_global_ = 0;
  win_wait0_ = sync_.wait_seconds();
  win_t0_ = Clock::now();
  check_replicas("after the shrink");
  const double seconds = since(t0);
  for (int r : lost)
    report_.line(fmt::format("elastic: lost rank {} at step {}; continuing on {} ranks (recovered in {:.2f} s)", r,
                             gstep, size_, seconds));
  return applied_ + 1;
}

template <class T>
void Loop<T>::step(int64_t gstep, size_t s) {
  const auto t0 = Clock::now();
  std::vector<uint32_t> idx = sampler_.shard(s, rank_, size_);
  gather(data_.train, idx, &xb_, &yb_);
  int slot = static_cast<int>(gstep % (cfg_.staleness + 1));
  T* g = grads_[static_cast<size_t>(slot)].data();
  sync_.begin(slot, g);
  T scale = T(1) / static_cast<T>(sampler_.batch_size(s));  // local sums add up to the global mean
  std::function<void(int)> ready;
  if (cfg_.overlap && !sync_.blocking()) ready = [&](int layer) { sync_.layer_ready(slot, layer); };
  win_loss_ += model_.loss_grad(params_.data(), xb_.data(), yb_.data(), static_cast<int>(idx.size()), scale, g, ready);
  slow_down(cfg_.slow, world_[static_cast<size_t>(rank_)], t0);
  balancer_.record(idx.size(), since(t0));
  if (!shard_) sync_.launch_rest(slot);
  if (gstep >= cfg_.staleness) apply(gstep - cfg_.staleness);
  win_n_ += static_cast<double>(idx.size());
  win_global_ += static_cast<double>(sampler_.batch_size(s));
}

// --balance: the parts of the global batch follow the speeds measured since the last time.
template <class T>
void Loop<T>::rebalance(int64_t gstep) {
  sampler_.set_weights(balancer_.exchange(comm_, sampler_.weights()));
  std::vector<size_t> parts;
  for (int r = 0; r < size_; r++) parts.push_back(sampler_.part_size(static_cast<size_t>(cfg_.batch), r, size_));
  // A line when a part moved by more than 2% of the batch since the last one shown.
  bool moved = shown_parts_.size() != parts.size();
  for (size_t r = 0; r < parts.size() && !moved; r++)
    moved = std::abs(static_cast<double>(parts[r]) - static_cast<double>(shown_parts_[r])) > 0.02 * cfg_.batch;
  if (!moved) return;
  shown_parts_ = parts;
  report_.line(fmt::format("balance: step {}: batch parts {}", gstep, fmt::join(parts, "/")));
}

template <class T>
void Loop<T>::log(int64_t epoch, size_t s, int64_t gstep) {
  double elapsed = since(win_t0_);
  double sums[3] = {win_loss_, win_n_, sync_.wait_seconds() - win_wait0_};
  comm_.all_reduce(std::span<double>(sums));
  if (!step_waits_.empty()) {
    comm_.all_reduce(std::span<double>(step_waits_), coralMin);
    for (double w : step_waits_) network_s_ += w;
    step_waits_.clear();
  }
  report_.step({epoch, cfg_.epochs, static_cast<int64_t>(s), static_cast<int64_t>(sampler_.steps_per_epoch()), gstep,
                sums[1] > 0 ? sums[0] / sums[1] : 0, win_global_ / elapsed, 100 * sums[2] / size_ / elapsed});
  win_loss_ = win_n_ = win_global_ = 0;
  win_wait0_ = sync_.wait_seconds();
  win_t0_ = Clock::now();
}

// Every rank must hold bit-identical parameters: max and min of a hash agree only then.
template <class T>
void Loop<T>::check_replicas(const char* when) {
  if (!cfg_.check_replicas) return;
  if (rank_ == cfg_.inject_divergence) params_[0] = std::nextafter(params_[0], T(1));
  uint64_t h = fnv1a(params_.data(), params_.size() * sizeof(T));
  uint64_t v[2] = {h, ~h};
  comm_.all_reduce(std::span<uint64_t>(v), coralMax);
  if (v[0] != ~v[1]) throw std::runtime_error(fmt::format("parameter replicas differ between ranks {}", when));
}

template <class T>
Result Loop<T>::run() {
  int64_t spe = static_cast<int64_t>(sampler_.steps_per_epoch());
  int64_t total = cfg_.epochs * spe;
  if (cfg_.max_steps > 0) total = std::min(total, cfg_.max_steps);
  // Every rank refuses alike, before the first collective.
  if (cfg_.staleness > 0 && cfg_.staleness >= total)
    throw std::invalid_argument(
        fmt::format("--staleness {} is not below the run's {} steps: no gradient would be applied before the end",
                    cfg_.staleness, total));
  start();
  int64_t gstep = start_step_;
  Result r;
  win_t0_ = Clock::now();
  int64_t evaluated = -1;  // the global step of the last evaluation
  while (gstep < total) {
    try {
      int64_t epoch = gstep / spe;
      sampler_.start_epoch(epoch);
      auto t_epoch = Clock::now();
      for (size_t s = static_cast<size_t>(gstep % spe); s < static_cast<size_t>(spe) && gstep < total; s++) {
        auto t0 = Clock::now();
        step_wait0_ = sync_.wait_seconds();
        if (fails_here(gstep)) die_now();
        if (balancer_.due(gstep)) rebalance(gstep);
        step(gstep, s);
        train_s_ += since(t0);
        // Sharded, the step waits in two collectives with the update between them: each one's
        // wait is split on its own, as the least any rank waited in it is the network's part.
        if (shard_)
          step_waits_.insert(step_waits_.end(), shard_waits_, shard_waits_ + 2);
        else
          step_waits_.push_back(sync_.wait_seconds() - step_wait0_);
        step_wait0_ = sync_.wait_seconds();
        samples_ += static_cast<int64_t>(sampler_.batch_size(s));
        gstep++;
        bool end_of_epoch = s + 1 == static_cast<size_t>(spe);
        if ((s + 1) % static_cast<size_t>(cfg_.log_every) == 0 || end_of_epoch || gstep == total)
          log(epoch, s, gstep);
        else
          report_.progress(epoch, static_cast<int64_t>(s), spe);
        if (cfg_.checkpoint_every > 0 && gstep % cfg_.checkpoint_every == 0) save(gstep);
      }
      // Here the epoch is over or training stops. Stale gradients still in flight are applied
      // before the last evaluation.
      if (gstep == total)
        for (int64_t g = std::max<int64_t>(gstep - cfg_.staleness, 0); g < gstep; g++) apply(g);
      double seconds = since(t_epoch);
      evaluate(model_, params_.data(), data_.test, comm_, &r.test_loss, &r.test_accuracy);
      evaluated = gstep;
      if (gstep % spe == 0)
        report_.epoch(epoch, r.test_loss, r.test_accuracy, seconds, train_s_,
                      static_cast<double>(gstep) * static_cast<double>(sync_.bytes_per_step()));
      check_replicas(fmt::format("after epoch {}", epoch + 1).c_str());
      save(gstep);
    } catch (const coral::error& e) {
      if (!cfg_.elastic) throw;
      // Another rank may die during the recovery itself: recover again, as long as each try
      // got as far as shrinking (else no death explains the failure).
      coral::error why = e;
      for (;;) {
        const int before = size_;
        try {
          gstep = recover(why, gstep);
          break;
        } catch (const coral::error& again) {
          if (size_ == before) throw;
          why = again;
        }
      }
    }
  }
  // A loss cut the last evaluation short.
  if (evaluated != gstep) evaluate(model_, params_.data(), data_.test, comm_, &r.test_loss, &r.test_accuracy);
  r.steps = gstep - start_step_;
  r.seconds = train_s_;
  r.samples_per_s = train_s_ > 0 ? static_cast<double>(samples_) / train_s_ : 0;
  r.comm_wait_pct = train_s_ > 0 ? 100 * (sync_.wait_seconds() - lost_wait_) / train_s_ : 0;
  // Rank 0's numbers, as the rest of the line: its own wait, split with the network share.
  r.network_wait_pct = train_s_ > 0 ? 100 * network_s_ / train_s_ : 0;
  r.bytes_per_step = static_cast<double>(sync_.bytes_per_step());
  report_.line(
      fmt::format("final: test accuracy {:.2f}% test loss {:.4f} after {} steps; {:.1f} s training, {:.0f} "
                  "samples/s, comm wait {:.1f}% (network {:.1f}%, slower ranks {:.1f}%), {:.1f} KiB sent/step",
                  100 * r.test_accuracy, r.test_loss, gstep, r.seconds, r.samples_per_s, r.comm_wait_pct,
                  r.network_wait_pct, std::max(0.0, r.comm_wait_pct - r.network_wait_pct), r.bytes_per_step / 1024));
  if (rank_ == 0 && !cfg_.dump_params.empty()) dump_params(cfg_.dump_params, params_);
  report_.finish();
  return r;
}

}  // namespace

std::vector<int> synthetic_hidden(int64_t params) {
  // in h + 3 h^2 + 10 h + (4 h + 10) biases = params, solved for h.
  double a = 3, b = kSyntheticInputs + 10 + 4, c = 10 - static_cast<double>(params);
  int h = std::max(1, static_cast<int>(std::lround((-b + std::sqrt(b * b - 4 * a * c)) / (2 * a))));
  return {h, h, h, h};
}

Result train(const Config& cfg, coral::communicator& comm) {
  validate(cfg);
  if (cfg.mode == "ps") return cfg.f64 ? train_ps<double>(cfg, comm) : train_ps<float>(cfg, comm);
  if (cfg.f64) return Loop<double>(cfg, comm).run();
  return Loop<float>(cfg, comm).run();
}

}  // namespace trainer
