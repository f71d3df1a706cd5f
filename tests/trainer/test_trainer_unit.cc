// The trainer's pieces, each against an independent reference: backward vs finite differences,
// the sampler's partition, checkpoint and dataset parsing (including broken files), buckets.
#include <unistd.h>
#include <zlib.h>
#include <catch2/catch.hpp>
#include <coral/coral.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <thread>

#include "checkpoint.h"
#include "data.h"
#include "grad_sync.h"
#include "mlp.h"
#include "optim.h"
#include "rng.h"
#include "sampler.h"
#include "trainer.h"

using namespace trainer;

namespace {

std::string temp_path(const std::string& name) {
  return "/tmp/coral-trainer-test-" + std::to_string(getpid()) + "-" + name;
}

void write_file(const std::string& path, const std::string& bytes, bool gz) {
  if (gz) {
    gzFile f = gzopen(path.c_str(), "wb");
    REQUIRE(f);
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
  } else {
    std::ofstream(path, std::ios::binary) << bytes;
  }
}

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("backward matches central finite differences") {
  Mlp<double> m(Layout({5, 7, 6, 3}));
  const int n = 4;
  std::vector<double> p(m.layout().nparams), g(p.size()), x(n * 5);
  m.init(p.data(), 7);
  Rng rng(3);
  for (double& v : p) v += 0.1 * (rng.uniform() - 0.5);  // non-zero biases too
  for (double& v : x) v = rng.uniform() * 2 - 1;
  std::vector<int32_t> y = {0, 2, 1, 2};
  const double scale = 0.25;
  std::vector<int> order;
  m.loss_grad(p.data(), x.data(), y.data(), n, scale, g.data(), [&](int l) { order.push_back(l); });
  CHECK(order == std::vector<int>{2, 1, 0});
  double worst = 0;
  for (size_t i = 0; i < p.size(); i++) {
    const double h = 1e-6, keep = p[i];
    p[i] = keep + h;
    double up = m.loss_grad(p.data(), x.data(), y.data(), n, 1, nullptr);
    p[i] = keep - h;
    double down = m.loss_grad(p.data(), x.data(), y.data(), n, 1, nullptr);
    p[i] = keep;
    double fd = scale * (up - down) / (2 * h);
    worst = std::max(worst, std::abs(fd - g[i]) / std::max(1e-4, std::abs(fd) + std::abs(g[i])));
  }
  CHECK(worst < 1e-6);
}

TEST_CASE("layout puts the last layer first and covers the vector") {
  Layout l({4, 3, 2});
  CHECK(l.offset[1] == 0);
  CHECK(l.size[1] == 3 * 2 + 2);
  CHECK(l.offset[0] == 8);
  CHECK(l.nparams == 8 + 4 * 3 + 3);
  CHECK_THROWS_WITH(Layout({4}), Catch::Contains("at least"));
  CHECK_THROWS_WITH(Layout({4, 0, 2}), Catch::Contains("positive"));
}

TEST_CASE("sampler shards partition each global batch whatever the rank count") {
  const size_t n = 103, batch = 10;
  for (int p : {1, 2, 3, 4, 7, 11, 13}) {
    Sampler s(n, batch, 42);
    s.start_epoch(3);
    std::multiset<uint32_t> seen;
    for (size_t step = 0; step < s.steps_per_epoch(); step++) {
      size_t min = SIZE_MAX, max = 0, total = 0;
      Sampler one(n, batch, 42);
      one.start_epoch(3);
      std::vector<uint32_t> whole = one.shard(step, 0, 1);
      std::multiset<uint32_t> batch_union;
      for (int r = 0; r < p; r++) {
        auto part = s.shard(step, r, p);
        min = std::min(min, part.size());
        max = std::max(max, part.size());
        total += part.size();
        batch_union.insert(part.begin(), part.end());
      }
      CHECK(max - min <= 1);
      CHECK(total == s.batch_size(step));
      CHECK(batch_union == std::multiset<uint32_t>(whole.begin(), whole.end()));
      seen.insert(batch_union.begin(), batch_union.end());
    }
    CHECK(seen.size() == n);
    CHECK(std::set<uint32_t>(seen.begin(), seen.end()).size() == n);  // every sample once
  }
  Sampler a(50, 5, 1), b(50, 5, 1);
  a.start_epoch(0);
  b.start_epoch(1);
  CHECK(a.shard(0, 0, 1) != b.shard(0, 0, 1));
  CHECK(a.batch_size(a.steps_per_epoch() - 1) == 5);
  Sampler c(52, 5, 1);
  CHECK(c.steps_per_epoch() == 11);
  CHECK(c.batch_size(10) == 2);
}

TEST_CASE("learning rate scales with the global batch and warms up linearly") {
  OptimConfig c;
  c.lr = 0.1;
  c.lr_batch = 64;
  c.warmup = 4;
  CHECK(learning_rate(c, 0, 128) == Approx(0.2 * 0.25));
  CHECK(learning_rate(c, 3, 128) == Approx(0.2));
  CHECK(learning_rate(c, 100, 32) == Approx(0.05));
}

TEST_CASE("optimizers: SGD with momentum and Adam follow their update rules; clipping") {
  OptimConfig c;
  c.kind = OptimKind::Sgd;
  c.lr = 0.5;
  c.lr_batch = 1;
  c.momentum = 0.9;
  Optimizer<double> sgd(c, 1);
  double p = 1, g = 2;
  sgd.step(&p, &g, 1);
  CHECK(p == Approx(0));  // 1 - 0.5 * 2
  g = 2;
  sgd.step(&p, &g, 1);
  CHECK(p == Approx(-0.5 * (0.9 * 2 + 2)));
  c.kind = OptimKind::Adam;
  c.lr = 0.01;
  Optimizer<double> adam(c, 1);
  p = 1;
  g = 5;
  adam.step(&p, &g, 1);
  CHECK(p == Approx(1 - 0.01));  // first Adam step moves by lr * sign(g)
  c.kind = OptimKind::Sgd;
  c.clip = 1;
  c.lr = 0.5;
  c.momentum = 0;
  Optimizer<double> clipped(c, 2);
  double q[2] = {0, 0}, h[2] = {3, 4};
  CHECK(clipped.step(q, h, 1) == Approx(5));
  CHECK(q[0] == Approx(-0.5 * 0.6));
  CHECK(q[1] == Approx(-0.5 * 0.8));
}

TEST_CASE("sharded optimizer: slices updated apart equal the whole update, bitwise") {
  OptimConfig c;  // Adam, the default
  c.weight_decay = 0.01;
  const size_t n = 37, k = 19;
  std::vector<float> whole(n), sharded(n), g(n);
  for (size_t i = 0; i < n; i++) whole[i] = sharded[i] = 0.1f * static_cast<float>(i) - 1;
  Optimizer<float> all(c, n), a(c, n), b(c, n);  // a owns [0, k), b owns [k, n)
  for (int step = 0; step < 5; step++) {
    for (size_t i = 0; i < n; i++) g[i] = std::sin(static_cast<float>(i * 7 + step));
    std::vector<float> ga(g), gb(g);
    all.step(whole.data(), g.data(), 128);
    std::vector<float> pa(sharded), pb(sharded);
    a.step(pa.data(), ga.data(), 128, 0, k);
    b.step(pb.data(), gb.data() + k, 128, k, n);
    // Nothing outside a rank's slice moved: the all-gather brings the rest.
    for (size_t i = 0; i < n; i++) CHECK((i < k ? pb[i] : pa[i]) == sharded[i]);
    for (size_t i = 0; i < n; i++) sharded[i] = i < k ? pa[i] : pb[i];
  }
  CHECK(whole == sharded);
  for (size_t i = k; i < n; i++) CHECK(a.m()[i] == 0);
  for (size_t i = 0; i < k; i++) CHECK(b.v()[i] == 0);
  CHECK_THROWS_AS(a.step(whole.data(), g.data(), 128, k, n + 1), std::out_of_range);
  c.clip = 1;
  Optimizer<float> clipped(c, n);
  CHECK_THROWS_AS(clipped.step(whole.data(), g.data(), 128, 0, k), std::logic_error);
}

TEST_CASE("--shard-optimizer: auto takes it where nothing rules it out, on names the obstacle") {
  Config cfg;
  CHECK(use_shards(cfg, 2, true));
  CHECK_FALSE(use_shards(cfg, 1, true));   // one rank: nothing to split
  CHECK_FALSE(use_shards(cfg, 4, false));  // bucketed overlap would be lost
  cfg.staleness = 1;
  CHECK_FALSE(use_shards(cfg, 2, true));
  cfg.shard_optimizer = "on";
  CHECK_THROWS_WITH(use_shards(cfg, 2, true), Catch::Contains("--staleness"));
  cfg.staleness = 0;
  cfg.optim.clip = 1;
  CHECK_THROWS_WITH(use_shards(cfg, 2, true), Catch::Contains("--clip"));
  cfg.optim.clip = 0;
  CHECK(use_shards(cfg, 3, false));  // on: even over buckets
  cfg.shard_optimizer = "off";
  CHECK_FALSE(use_shards(cfg, 2, true));
}

TEST_CASE("checkpoints round-trip and reject damage") {
  std::string path = temp_path("ckpt");
  Checkpoint<float> c{{3, 4, 2}, 1, 17, 16, 64, 99, {1.5f, -2.f, 3.f}, {0.1f, 0.2f, 0.3f}, {}};
  save_checkpoint(path, c);
  Checkpoint<float> d = load_checkpoint<float>(path);
  CHECK(d.dims == c.dims);
  CHECK(d.global_step == 17);
  CHECK(d.optimizer_steps == 16);
  CHECK(d.global_batch == 64);
  CHECK(d.seed == 99);
  CHECK(d.params == c.params);
  CHECK(d.m == c.m);
  CHECK(d.v.empty());
  CHECK_THROWS_WITH(load_checkpoint<double>(path), Catch::Contains("4-byte parameters"));

  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 1;
  write_file(path, flipped, false);
  CHECK_THROWS_WITH(load_checkpoint<float>(path), Catch::Contains("CRC"));
  write_file(path, bytes.substr(0, bytes.size() - 9), false);
  CHECK_THROWS_WITH(load_checkpoint<float>(path), Catch::Contains("CRC"));
  write_file(path, "hello world, not a checkpoint", false);
  CHECK_THROWS_WITH(load_checkpoint<float>(path), Catch::Contains("not a coral-train checkpoint"));
  std::remove(path.c_str());
  CHECK_THROWS_WITH(load_checkpoint<float>(path), Catch::Contains("cannot open"));
  CHECK_THROWS_WITH(save_checkpoint("/nonexistent-dir/x", c), Catch::Contains("/nonexistent-dir/x"));
}

TEST_CASE("bundled digits: counts, ranges and the fixed split") {
  Data d = load_digits(default_digits_path());
  CHECK(d.train.size() == 1438);
  CHECK(d.test.size() == 359);
  CHECK(d.train.dim == 64);
  CHECK(d.train.x.size() == 1438u * 64);
  for (float v : d.train.x) REQUIRE((v >= 0 && v <= 1));
  std::set<int32_t> labels(d.train.y.begin(), d.train.y.end());
  CHECK(labels.size() == 10);
}

TEST_CASE("broken digits files give the line and field") {
  std::string path = temp_path("digits.csv.gz");
  std::string good;
  for (int i = 0; i < 64; i++) good += std::to_string(i % 17) + ",";
  write_file(path, good + "3\n" + good + "12\n", true);
  CHECK_THROWS_WITH(load_digits(path), Catch::Contains("line 2, field 65"));
  write_file(path, good + "3\n" + good.substr(0, good.size() - 1) + "\n", true);
  CHECK_THROWS_WITH(load_digits(path), Catch::Contains("line 2"));
  write_file(path, good + "3,4\n", true);
  CHECK_THROWS_WITH(load_digits(path), Catch::Contains("65 comma-separated"));
  write_file(path, "", true);
  CHECK_THROWS_WITH(load_digits(path), Catch::Contains("no samples"));
  write_file(path, std::string("\x1f\x8b\x08\x00garbage-garbage-garbage", 27), false);
  CHECK_THROWS_WITH(load_digits(path), Catch::Contains(path));
  std::remove(path.c_str());
  CHECK_THROWS_WITH(load_digits(path), Catch::Contains("cannot open"));
  write_file(path, good + "9\n", true);
  CHECK(load_digits(path).train.size() == 1);
  std::remove(path.c_str());
}

TEST_CASE("Fashion-MNIST IDX reader accepts well-formed files and names what is wrong") {
  std::string dir = temp_path("idx");
  REQUIRE(system(("mkdir -p " + dir).c_str()) == 0);
  auto images = [](uint32_t n, uint32_t h, uint32_t w, std::string extra = "") {
    return be32(0x803) + be32(n) + be32(h) + be32(w) + std::string(n * h * w, '\x7f') + extra;
  };
  auto labels = [](uint32_t n, char v = 3) { return be32(0x801) + be32(n) + std::string(n, v); };
  write_file(dir + "/train-images-idx3-ubyte.gz", images(3, 2, 2), true);
  write_file(dir + "/train-labels-idx1-ubyte.gz", labels(3), true);
  write_file(dir + "/t10k-images-idx3-ubyte.gz", images(2, 2, 2), true);
  write_file(dir + "/t10k-labels-idx1-ubyte.gz", labels(2), true);
  Data d = load_fashion_mnist(dir);
  CHECK(d.train.size() == 3);
  CHECK(d.test.size() == 2);
  CHECK(d.train.dim == 4);
  CHECK(d.train.x[0] == Approx(127 / 255.0));
  write_file(dir + "/t10k-labels-idx1-ubyte.gz", labels(2, 12), true);
  CHECK_THROWS_WITH(load_fashion_mnist(dir), Catch::Contains("label 12"));
  write_file(dir + "/t10k-labels-idx1-ubyte.gz", labels(3), true);
  CHECK_THROWS_WITH(load_fashion_mnist(dir), Catch::Contains("3 labels for 2 images"));
  write_file(dir + "/t10k-images-idx3-ubyte.gz", images(2, 2, 2, "xx"), true);
  CHECK_THROWS_WITH(load_fashion_mnist(dir), Catch::Contains("promises 8 bytes"));
  write_file(dir + "/t10k-images-idx3-ubyte.gz", be32(0x801) + be32(0) + be32(0) + be32(0), true);
  CHECK_THROWS_WITH(load_fashion_mnist(dir), Catch::Contains("magic"));
  write_file(dir + "/t10k-images-idx3-ubyte.gz", "ab", true);
  CHECK_THROWS_WITH(load_fashion_mnist(dir), Catch::Contains("too short"));
  CHECK_THROWS_WITH(load_fashion_mnist(dir + "/missing"), Catch::Contains("cannot open"));
  REQUIRE(system(("rm -rf " + dir).c_str()) == 0);
}

TEST_CASE("synthetic model size follows --params") {
  for (int64_t target : {1'000'000LL, 25'000'000LL, 100'000'000LL}) {
    std::vector<int> d{kSyntheticInputs};
    for (int h : synthetic_hidden(target)) d.push_back(h);
    d.push_back(10);
    double got = static_cast<double>(Layout(d).nparams);
    CHECK(std::abs(got - static_cast<double>(target)) / static_cast<double>(target) < 0.01);
  }
}

// Two ranks as threads through the public API: buckets sum the gradients, in every wire format.
TEST_CASE("gradient buckets all-reduce each slice exactly once") {
  Layout layout({300, 200, 100, 10});
  coralUniqueId id = coral::communicator::unique_id();
  for (Wire wire : {Wire::Same, Wire::Bf16, Wire::Fp16}) {
    for (double bucket_mb : {0.0001, 0.05, 100.0}) {
      std::vector<std::string> errors(2);
      std::vector<std::thread> ts;
      for (int r = 0; r < 2; r++)
        ts.emplace_back([&, r] {
          try {
            coral::communicator comm(2, id, r);
            GradSync<float> sync(comm.get(), layout, static_cast<size_t>(bucket_mb * (1 << 20)), wire, 1);
            // Layers hold 4040, 80400 and 240800 bytes in fp32 (half that in 16 bits).
            size_t expect_buckets = bucket_mb > 1 ? 1 : bucket_mb < 0.001 ? 3 : wire == Wire::Same ? 2 : 1;
            if (sync.buckets() != expect_buckets) errors[r] = "bucket count " + std::to_string(sync.buckets());
            std::vector<float> g(layout.nparams);
            // Small integers: exact in bf16 and fp16, and so are their sums.
            for (size_t i = 0; i < g.size(); i++) g[i] = static_cast<float>((i * 7 + r) % 100);
            sync.begin(0, g.data());
            for (int l = 2; l >= 0; l--) sync.layer_ready(0, l);
            sync.launch_rest(0);
            sync.wait(0);
            for (size_t i = 0; i < g.size() && errors[r].empty(); i++)
              if (g[i] != static_cast<float>((i * 7) % 100 + (i * 7 + 1) % 100))
                errors[r] = "wrong sum at " + std::to_string(i);
          } catch (const std::exception& e) {
            errors[r] = e.what();
          }
        });
      for (auto& t : ts) t.join();
      INFO("wire " << static_cast<int>(wire) << " bucket " << bucket_mb);
      CHECK(errors[0] == "");
      CHECK(errors[1] == "");
      id = coral::communicator::unique_id();
    }
  }
  CHECK_THROWS_WITH(parse_wire("fp8"), Catch::Contains("fp8"));
}
