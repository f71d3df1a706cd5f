#include "common.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace trainer {

void validate(const Config& cfg) {
  using std::invalid_argument;
  if (cfg.batch < 1) throw invalid_argument("--batch must be at least 1");
  if (cfg.epochs < 1) throw invalid_argument("--epochs must be at least 1");
  // Each step in flight holds a gradient copy: beyond a thousand it is memory, not an experiment.
  if (cfg.staleness < 0 || cfg.staleness > 1000) throw invalid_argument("--staleness must be 0 to 1000");
  if (cfg.staleness > 0 && (!cfg.checkpoint.empty() || !cfg.resume.empty()))
    throw invalid_argument(
        "--staleness cannot be combined with --checkpoint/--resume (in-flight gradients are not saved)");
  if (cfg.log_every < 1) throw invalid_argument("--log-every must be at least 1");
  if (cfg.elastic && cfg.staleness > 0)
    throw invalid_argument("--elastic cannot be combined with --staleness (in-flight gradients die with a rank)");
  if (!(cfg.bucket_mb > 0) || cfg.bucket_mb > 1 << 20)
    throw invalid_argument("--bucket-mb must be above 0 and at most 1048576 (1 TiB)");
  if (cfg.max_steps < 0) throw invalid_argument("--steps must be 0 (no limit) or more");
  if (cfg.checkpoint_every < 0) throw invalid_argument("--checkpoint-every must be 0 (off) or more");
  if (cfg.optim.warmup < 0) throw invalid_argument("--warmup must be 0 or more steps");
  if (!(cfg.optim.lr > 0)) throw invalid_argument("--lr must be positive");
  if (cfg.balance_every < 1) throw invalid_argument("--balance-every must be at least 1");
  if (cfg.compress.kind != Compression::None) {
    if (cfg.staleness > 0 || cfg.elastic)
      throw invalid_argument("--compress cannot be combined with --staleness or --elastic");
    if (!cfg.checkpoint.empty() || !cfg.resume.empty())
      throw invalid_argument("--compress cannot be combined with --checkpoint/--resume (the residual is not saved)");
  }
  if (cfg.mode != "sync" && cfg.mode != "ps")
    throw invalid_argument(fmt::format("--mode must be sync or ps, not '{}'", cfg.mode));
  if (cfg.mode == "ps") {
    if (cfg.servers < 1) throw invalid_argument("--servers must be at least 1");
    if (cfg.staleness > 0 || cfg.elastic || cfg.balance || cfg.compress.kind != Compression::None ||
        !cfg.checkpoint.empty() || !cfg.resume.empty() || cfg.optim.clip > 0 || cfg.wire != Wire::Same ||
        cfg.fail_at_step >= 0)
      throw invalid_argument(
          "--mode ps cannot be combined with --staleness, --elastic, --balance, --compress, --checkpoint, "
          "--resume, --clip, --grad-comm bf16/fp16 or --fail-at-step");
  }
  if (cfg.shard_optimizer != "auto" && cfg.shard_optimizer != "on" && cfg.shard_optimizer != "off")
    throw invalid_argument(fmt::format("--shard-optimizer must be auto, on or off, not '{}'", cfg.shard_optimizer));
  if (cfg.shard_optimizer == "on") (void)use_shards(cfg, 1, true);
  if (cfg.max_staleness < -1) throw invalid_argument("--max-staleness must be 0 or more (or -1: unbounded)");
}

void check_outputs(const Config& cfg) {
  const std::pair<const char*, const std::string*> outputs[] = {{"--checkpoint", &cfg.checkpoint},
                                                                {"--dump-params", &cfg.dump_params},
                                                                {"--csv", &cfg.csv},
                                                                {"--plot", &cfg.plot}};
  for (const auto& [flag, path] : outputs) {
    if (path->empty()) continue;
    const std::filesystem::path dir = std::filesystem::path(*path).parent_path();
    const std::string d = dir.empty() ? "." : dir.string();
    if (::access(d.c_str(), W_OK) != 0)
      throw std::invalid_argument(
          fmt::format("{} '{}': cannot write in '{}' ({})", flag, *path, d, std::strerror(errno)));
  }
}

bool use_shards(const Config& cfg, int ranks, bool blocking) {
  // What each rules out: the other modes own the exchange; stale or elastic steps need every
  // rank to hold all of the optimizer state; 16-bit wires all-reduce a copy; clipping needs the
  // whole gradient's norm.
  const char* why = cfg.mode != "sync"                       ? "--mode ps"
                    : cfg.staleness > 0                      ? "--staleness"
                    : cfg.elastic                            ? "--elastic"
                    : cfg.compress.kind != Compression::None ? "--compress"
                    : cfg.wire != Wire::Same                 ? "--grad-comm bf16/fp16"
                    : cfg.optim.clip > 0                     ? "--clip"
                                                             : nullptr;
  if (cfg.shard_optimizer == "on") {
    if (why) throw std::invalid_argument(fmt::format("--shard-optimizer on cannot be combined with {}", why));
    return true;
  }
  return cfg.shard_optimizer == "auto" && !why && ranks > 1 && blocking;
}

Data load_data(const Config& cfg) {
  if (cfg.dataset == "digits") return load_digits(cfg.data_path.empty() ? default_digits_path() : cfg.data_path);
  if (cfg.dataset == "fashion-mnist") return load_fashion_mnist(cfg.data_path.empty() ? kFashionDir : cfg.data_path);
  if (cfg.dataset == "synthetic") {
    size_t n = static_cast<size_t>(cfg.batch) * 16;
    return make_synthetic(kSyntheticInputs, 10, n, n / 8 + 1, cfg.seed);
  }
  throw std::invalid_argument(fmt::format("unknown dataset '{}' (digits, fashion-mnist or synthetic)", cfg.dataset));
}

std::vector<int> model_dims(const Config& cfg, const Data& data) {
  std::vector<int> d{cfg.dataset == "synthetic" ? kSyntheticInputs : data.train.dim};
  std::vector<int> hidden = cfg.hidden;
  if (hidden.empty()) {
    if (cfg.dataset == "synthetic")
      hidden = synthetic_hidden(cfg.synthetic_params);
    else
      hidden = data.name == "digits" ? std::vector<int>{128} : std::vector<int>{256, 256};
  }
  d.insert(d.end(), hidden.begin(), hidden.end());
  d.push_back(cfg.dataset == "synthetic" ? 10 : data.train.classes);
  return d;
}

template <class T>
void evaluate(Mlp<T>& model, const T* params, const Dataset& d, coral::communicator& comm, double* loss, double* acc) {
  const size_t rank = static_cast<size_t>(comm.rank()), size = static_cast<size_t>(comm.size());
  size_t lo = d.size() * rank / size, hi = d.size() * (rank + 1) / size;
  double sums[3] = {0, 0, static_cast<double>(hi - lo)};
  std::vector<T> x;
  for (size_t b = lo; b < hi; b += 1024) {
    size_t e = std::min(hi, b + 1024);
    x.assign(d.x.begin() + static_cast<ptrdiff_t>(b * d.dim), d.x.begin() + static_cast<ptrdiff_t>(e * d.dim));
    int64_t correct = 0;
    model.evaluate(params, x.data(), d.y.data() + b, static_cast<int>(e - b), &sums[0], &correct);
    sums[1] += static_cast<double>(correct);
  }
  comm.all_reduce(std::span<double>(sums));
  *loss = sums[2] > 0 ? sums[0] / sums[2] : 0;
  *acc = sums[2] > 0 ? sums[1] / sums[2] : 0;
}

std::string dims_text(const Layout& l) {
  std::string text;
  // fmt, not string + to_string: GCC 12 warns falsely on that (-Wrestrict, GCC bug 105329).
  for (int d : l.dims) text += fmt::format("{}{}", text.empty() ? "" : "-", d);
  return text;
}

template <class T>
void gather(const Dataset& d, const std::vector<uint32_t>& idx, std::vector<T>* x, std::vector<int32_t>* y) {
  x->resize(idx.size() * static_cast<size_t>(d.dim));
  y->resize(idx.size());
  for (size_t i = 0; i < idx.size(); i++) {
    const float* src = d.x.data() + static_cast<size_t>(idx[i]) * d.dim;
    std::copy(src, src + d.dim, x->data() + i * d.dim);
    (*y)[i] = d.y[idx[i]];
  }
}

template <class T>
void dump_params(const std::string& path, const std::vector<T>& params) {
  std::vector<double> p(params.begin(), params.end());
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(p.data()), static_cast<std::streamsize>(p.size() * sizeof(double)));
  if (!out) throw std::runtime_error(fmt::format("cannot write {}", path));
}

template void gather(const Dataset&, const std::vector<uint32_t>&, std::vector<float>*, std::vector<int32_t>*);
template void gather(const Dataset&, const std::vector<uint32_t>&, std::vector<double>*, std::vector<int32_t>*);
template void dump_params(const std::string&, const std::vector<float>&);
template void dump_params(const std::string&, const std::vector<double>&);
template void evaluate(Mlp<float>&, const float*, const Dataset&, coral::communicator&, double*, double*);
template void evaluate(Mlp<double>&, const double*, const Dataset&, coral::communicator&, double*, double*);

uint64_t fnv1a(const void* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; i++) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 0x100000001b3ULL;
  return h;
}

}  // namespace trainer
