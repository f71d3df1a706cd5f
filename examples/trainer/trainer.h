// The synchronous data-parallel training loop (what PyTorch DDP does), over a Coral communicator.
#pragma once
#include <coral/coral.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "balance.h"
#include "compress.h"
#include "grad_sync.h"
#include "optim.h"

namespace trainer {

struct Config {
  std::string dataset = "digits";         // digits | fashion-mnist | synthetic
  std::string data_path;                  // digits CSV or Fashion-MNIST directory; empty = default
  std::vector<int> hidden;                // hidden widths; empty = the dataset's default
  int64_t synthetic_params = 25'000'000;  // synthetic model size (widths derived from it)
  int64_t epochs = 5;
  int64_t max_steps = 0;  // stop after this many global steps in all (0 = no limit)
  int64_t batch = 128;    // global batch, split across ranks
  OptimConfig optim;
  bool f64 = false;  // parameters, gradients and all-reduce in double
  Wire wire = Wire::Same;
  double bucket_mb = 25;
  bool overlap = true;                   // all-reduce buckets during backward
  std::string shard_optimizer = "auto";  // auto | on | off: the optimizer update split over the ranks
  int staleness = 0;                     // apply the gradient from k steps ago
  uint64_t seed = 1;
  std::string checkpoint;  // written at each epoch end and every checkpoint_every steps
  int64_t checkpoint_every = 0;
  std::string resume;
  std::string csv, plot, dump_params;
  int64_t log_every = 50;
  bool check_replicas = true;
  int inject_divergence = -1;   // tests: this rank nudges a parameter before the replica check
  bool elastic = false;         // survive lost ranks: shrink to the survivors and go on
  int64_t fail_at_step = -1;    // tests: fail_ranks kill themselves at the start of this global step
  std::vector<int> fail_ranks;  // with fail_at_step; empty: the last rank
  Compression compress;         // --compress: what replaces the dense all-reduce
  SlowRank slow;                // --slow-rank (experiments, tests)
  bool balance = false;         // split each global batch by measured speed
  int64_t balance_every = 20;   // re-measure every N steps
  std::string mode = "sync";    // sync (all-reduce) | ps (parameter servers, ps.cc)
  int servers = 1;              // --mode ps: the first S ranks serve shards of the parameters
  int max_staleness = -1;       // --mode ps: bound on how far a worker runs ahead (-1: none)
};

struct Result {
  double test_accuracy = 0, test_loss = 0;
  int64_t steps = 0;
  double seconds = 0, samples_per_s = 0, comm_wait_pct = 0;
  double network_wait_pct = 0;  // the part of comm_wait_pct every rank waited (see trainer.cc)
  double bytes_per_step = 0;    // what one rank put into collectives (or messages) per step
};

// Whether the sharded optimizer runs (--shard-optimizer): "on" throws where an option rules it
// out; "auto" takes it on several ranks when the all-reduce would be one blocking call anyway.
bool use_shards(const Config& cfg, int ranks, bool blocking);

// Runs training on every rank of comm; throws std::exception with a clear message on bad input.
Result train(const Config& cfg, coral::communicator& comm);

// Hidden widths of a synthetic MLP with about `params` parameters: kSyntheticInputs inputs, four
// equal hidden layers, 10 outputs. The narrow input layer matters: its gradient is final last,
// so its bucket's all-reduce is the one backward cannot hide.
inline constexpr int kSyntheticInputs = 512;
std::vector<int> synthetic_hidden(int64_t params);

}  // namespace trainer
