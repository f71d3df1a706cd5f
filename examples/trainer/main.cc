// coral-train: the reference data-parallel trainer. Run it under a launcher, e.g.
//   coral-run -n 4 coral-train --dataset fashion-mnist --epochs 5
#include <cblas.h>
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>

#include "data.h"
#include "trainer.h"

namespace {

int64_t parse_count(const std::string& s) {
  size_t used = 0;
  double v = std::stod(s, &used);
  std::string suffix = s.substr(used);
  if (suffix == "K" || suffix == "k")
    v *= 1e3;
  else if (suffix == "M" || suffix == "m")
    v *= 1e6;
  else if (suffix == "G" || suffix == "g")
    v *= 1e9;
  else if (!suffix.empty())
    throw std::invalid_argument("bad suffix");
  if (!(v >= 1) || v > 1e12) throw std::invalid_argument("must be 1 to 1e12");
  return static_cast<int64_t>(v);
}

}  // namespace

int main(int argc, char** argv) {
  trainer::Config cfg;
  std::string optimizer = "adam", wire = "fp32", dtype = "f32", params = "25M", compress = "none", slow;
  CLI::App app{"coral-train: synchronous data-parallel training of an MLP over Coral's all-reduce"};
  app.add_option("--dataset", cfg.dataset, "digits (bundled), fashion-mnist, or synthetic")
      ->capture_default_str()
      ->check(CLI::IsMember({"digits", "fashion-mnist", "fashion", "synthetic"}));
  app.add_option(
      "--data", cfg.data_path,
      "digits CSV (.gz) or Fashion-MNIST directory (default: bundled / " + std::string(trainer::kFashionDir) + ")");
  app.add_option("--hidden", cfg.hidden, "hidden layer widths, e.g. --hidden 256 256")->check(CLI::PositiveNumber);
  app.add_option("--params", params, "synthetic model size in parameters (e.g. 25M)")->capture_default_str();
  app.add_option("--epochs", cfg.epochs, "passes over the training set (default 5; 20 for digits)");
  app.add_option("--steps", cfg.max_steps, "stop after this many global steps (0: no limit)")->capture_default_str();
  app.add_option("--batch", cfg.batch, "global batch size, split across ranks")->capture_default_str();
  app.add_option("--optimizer", optimizer, "sgd (with momentum) or adam")
      ->capture_default_str()
      ->check(CLI::IsMember({"sgd", "adam"}));
  app.add_option("--lr", cfg.optim.lr, "learning rate at the reference batch --lr-batch")->capture_default_str();
  app.add_option("--lr-batch", cfg.optim.lr_batch, "reference batch of --lr (linear scaling rule)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", cfg.optim.warmup, "linear learning-rate warmup steps")->capture_default_str();
  app.add_option("--momentum", cfg.optim.momentum, "SGD momentum")->capture_default_str();
  app.add_option("--weight-decay", cfg.optim.weight_decay, "L2 weight decay")->capture_default_str();
  app.add_option("--clip", cfg.optim.clip, "clip the global gradient norm to this (0: off)")->capture_default_str();
  app.add_option("--dtype", dtype, "f32 or f64 parameters and gradients")
      ->capture_default_str()
      ->check(CLI::IsMember({"f32", "f64"}));
  app.add_option("--grad-comm", wire,
                 "gradient precision on the wire: the gradients' own (fp32 with --dtype f32, fp64 with f64), "
                 "or bf16 or fp16")
      ->capture_default_str()
      ->check(CLI::IsMember({"fp32", "fp64", "bf16", "fp16"}));
  app.add_option("--bucket-mb", cfg.bucket_mb, "gradient bucket size in MiB")->capture_default_str();
  app.add_flag("!--no-overlap", cfg.overlap, "all-reduce after backward instead of during it");
  app.add_option("--shard-optimizer", cfg.shard_optimizer,
                 "each rank updates 1/P of the parameters between a reduce-scatter and an all-gather (ZeRO "
                 "stage 1); auto: where nothing rules it out and there is no backward overlap to lose")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "on", "off"}));
  app.add_option("--staleness", cfg.staleness,
                 "apply the averaged gradient from k steps ago while newer all-reduces run (0: synchronous)")
      ->capture_default_str();
  app.add_option("--seed", cfg.seed, "seed of initialisation and shuffling")->capture_default_str();
  app.add_option("--checkpoint", cfg.checkpoint, "checkpoint file written by rank 0 at each epoch end");
  app.add_option("--checkpoint-every", cfg.checkpoint_every, "also checkpoint every N steps")->capture_default_str();
  app.add_option("--resume", cfg.resume, "resume from this checkpoint (any number of ranks)");
  app.add_option("--log-every", cfg.log_every, "print a line every N steps")->capture_default_str();
  app.add_option("--csv", cfg.csv, "write the curves as CSV");
  app.add_option("--plot", cfg.plot, "draw loss and accuracy curves to this PNG (needs gnuplot)");
  app.add_option("--dump-params", cfg.dump_params, "write the final parameters as raw float64");
  app.add_flag("!--no-replica-check", cfg.check_replicas, "skip the per-epoch replica checksum");
  app.add_option("--inject-divergence", cfg.inject_divergence)->group("");  // tests only
  app.add_flag("--elastic", cfg.elastic,
               "survive lost ranks: shrink to the survivors and go on with the same global batch (run under "
               "coral-run --keep-going)");
  app.add_option("--fail-at-step", cfg.fail_at_step,
                 "tests: the --fail-rank ranks (default: the last) kill themselves at the start of this global step")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--fail-rank", cfg.fail_ranks, "tests: with --fail-at-step, the ranks that die")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--mode", cfg.mode, "sync (all-reduce every step) or ps (asynchronous parameter servers)")
      ->capture_default_str()
      ->check(CLI::IsMember({"sync", "ps"}));
  app.add_option("--servers", cfg.servers, "--mode ps: the first S ranks are parameter servers")->capture_default_str();
  app.add_option("--max-staleness", cfg.max_staleness,
                 "--mode ps: a worker runs at most k pushes ahead of the slowest (-1: unbounded)")
      ->capture_default_str();
  app.add_option("--compress", compress,
                 "send compressed gradients with error feedback: powersgd:R (rank-R factors) or topk:F (largest "
                 "fraction F)")
      ->capture_default_str();
  app.add_option("--slow-rank", slow, "experiments: RANK:FACTOR makes that rank's compute FACTOR times slower");
  app.add_flag("--balance", cfg.balance, "split each global batch in proportion to each rank's measured speed");
  app.add_option("--balance-every", cfg.balance_every, "--balance: re-measure every N steps")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    if (cfg.dataset == "fashion") cfg.dataset = "fashion-mnist";
    cfg.optim.kind = optimizer == "sgd" ? trainer::OptimKind::Sgd : trainer::OptimKind::Adam;
    if (optimizer == "sgd" && app.count("--lr") == 0) cfg.optim.lr = 0.05;
    // The bundled digits set is small (12 steps an epoch): it needs more passes.
    if (cfg.dataset == "digits" && app.count("--epochs") == 0) cfg.epochs = 20;
    cfg.f64 = dtype == "f64";
    cfg.wire = trainer::parse_wire(wire);
    // fp32 and fp64 name the gradients' own type: a wire wider or narrower than it would be a
    // conversion the trainer does not make.
    if (app.count("--grad-comm") && ((wire == "fp32" && cfg.f64) || (wire == "fp64" && !cfg.f64)))
      throw std::invalid_argument("--grad-comm " + wire + " with --dtype " + dtype + ": the wire carries the " +
                                  "gradients' own type (--grad-comm " + (cfg.f64 ? "fp64" : "fp32") +
                                  ") or bf16 or fp16");
    // Options of one mode given to another would be silently ignored.
    if (cfg.mode != "ps")
      for (const char* o : {"--servers", "--max-staleness"})
        if (app.count(o)) throw std::invalid_argument(std::string(o) + " applies to --mode ps only");
    if (!cfg.fail_ranks.empty() && cfg.fail_at_step < 0)
      throw std::invalid_argument("--fail-rank needs --fail-at-step (the step at which those ranks die)");
    cfg.compress = trainer::parse_compression(compress);
    if (!slow.empty()) cfg.slow = trainer::parse_slow_rank(slow);
    try {
      cfg.synthetic_params = parse_count(params);
    } catch (const std::exception&) {
      throw std::invalid_argument("--params must be a count from 1 to 1e12 such as 25M, not '" + params + "'");
    }
    // One BLAS thread per rank: ranks already fill the cores, and results stay reproducible.
    if (!std::getenv("OPENBLAS_NUM_THREADS")) openblas_set_num_threads(1);
    // Started by hand, without a launcher (none of the variables coralCommInitEnv reads): one
    // rank, as a torch script run without torchrun trains on one process.
    bool launched = false;
    for (const char* v : {"CORAL_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "RANK"})
      launched = launched || std::getenv(v) != nullptr;
    coral::communicator comm =
        launched ? coral::communicator() : coral::communicator(1, coral::communicator::unique_id(), 0);
    trainer::train(cfg, comm);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "coral-train: %s\n", e.what());
    return 1;
  }
  return 0;
}
