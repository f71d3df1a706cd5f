// The variants of data parallelism: gradient compression with error feedback, the straggler
// split, and the parameter servers' staleness accounting.
#include <catch2/catch.hpp>
#include <coral/coral.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "balance.h"
#include "common/thread_ranks.h"
#include "compress.h"
#include "ps.h"
#include "sampler.h"

using namespace trainer;

namespace {

// One rank on the test's own thread, so assertions stay on Catch's thread.
coral::communicator one_rank() { return coral::communicator(1, coral::communicator::unique_id(), 0); }

std::vector<double> random_vector(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(n);
  for (double& x : v) x = u(gen);
  return v;
}

// Writes a rank-`rank` n x m matrix (sum of outer products) into w.
void low_rank(double* w, size_t n, size_t m, int rank, unsigned seed) {
  std::vector<double> a = random_vector(n * rank, seed), b = random_vector(m * rank, seed + 1);
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < m; j++) {
      double s = 0;
      for (int k = 0; k < rank; k++) s += a[i * rank + k] * b[j * rank + k];
      w[i * m + j] = s;
    }
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); i++) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

const Layout kLayout({20, 30, 4});  // W0 20x30 (factored at R <= 11), W1 30x4 (dense at R >= 4)

}  // namespace

TEST_CASE("compression specs parse and bad ones name the problem") {
  CHECK(parse_compression("none").kind == Compression::None);
  Compression p = parse_compression("powersgd:4");
  CHECK((p.kind == Compression::PowerSgd && p.rank == 4));
  Compression t = parse_compression("topk:0.01");
  CHECK((t.kind == Compression::TopK && t.fraction == 0.01));
  CHECK_THROWS_WITH(parse_compression("powersgd:0"), Catch::Contains("R must be"));
  CHECK_THROWS_WITH(parse_compression("powersgd:2x"), Catch::Contains("R must be"));
  CHECK_THROWS_WITH(parse_compression("topk:1.5"), Catch::Contains("F must be"));
  CHECK_THROWS_WITH(parse_compression("topk"), Catch::Contains("F must be"));
  CHECK_THROWS_WITH(parse_compression("zip:3"), Catch::Contains("'zip'"));
}

TEST_CASE("orthonormalize gives orthonormal columns and zeroes dependent ones") {
  const size_t n = 50, r = 3;
  std::vector<double> a = random_vector(n * r, 7);
  for (size_t k = 0; k < n; k++) a[k * r + 2] = 2 * a[k * r + 0] - a[k * r + 1];  // dependent
  orthonormalize(a.data(), n, r);
  for (size_t i = 0; i < 2; i++)
    for (size_t j = 0; j < 2; j++) {
      double dot = 0;
      for (size_t k = 0; k < n; k++) dot += a[k * r + i] * a[k * r + j];
      CHECK(std::abs(dot - (i == j ? 1 : 0)) < 1e-12);
    }
  for (size_t k = 0; k < n; k++) CHECK(a[k * r + 2] == 0);
}

TEST_CASE("PowerSGD: a matrix of rank at most R comes back exactly, with no residual") {
  coral::communicator comm = one_rank();
  Compressor<double> c(comm.get(), kLayout, parse_compression("powersgd:4"), 1);
  REQUIRE(c.factored_layers() == 1);
  std::vector<double> g = random_vector(kLayout.nparams, 3);
  low_rank(g.data() + kLayout.offset[0], 20, 30, 3, 11);
  const std::vector<double> in = g;
  c.reduce(g.data());
  CHECK(max_abs_diff(g, in) < 1e-12);
  double res = 0;
  for (double e : c.residual()) res = std::max(res, std::abs(e));
  CHECK(res < 1e-12);
  // Factors are smaller than the matrix: (20 + 30) * 4 against 600, plus the dense rest.
  CHECK(c.bytes_per_step() == (20 * 4 + 30 * 4 + 30 + 30 * 4 + 4) * sizeof(double));
}

TEST_CASE("error feedback: what goes out plus the new residual equals what came in plus the old") {
  coral::communicator comm = one_rank();
  for (const char* spec : {"powersgd:1", "topk:0.05"}) {
    Compressor<double> c(comm.get(), kLayout, parse_compression(spec), 1);
    std::vector<double> old_res(kLayout.nparams, 0.0);
    double first_residual = 0;
    for (unsigned step = 0; step < 4; step++) {
      std::vector<double> g = random_vector(kLayout.nparams, 100 + step);
      const std::vector<double> in = g;
      c.reduce(g.data());
      double worst = 0;
      for (size_t i = 0; i < g.size(); i++)
        worst = std::max(worst, std::abs(g[i] + c.residual()[i] - in[i] - old_res[i]));
      INFO(spec << " step " << step);
      CHECK(worst < 1e-12);
      old_res = c.residual();
      if (step == 0)
        for (double e : old_res) first_residual = std::max(first_residual, std::abs(e));
    }
    CHECK(first_residual > 0.1);  // a full-rank gradient does not fit: the residual is real
  }
}

TEST_CASE("compressed sums agree on every rank; exact when the sum fits") {
  // PowerSGD R=2 on two rank-1 matrices, top-k on vectors with few non-zeros each.
  for (const char* spec : {"powersgd:2", "topk:0.1"}) {
    std::vector<std::vector<double>> out(2), ins(2);
    const std::string error = on_ranks(2, [&](int rank, coralComm_t comm) {
      const size_t r = static_cast<size_t>(rank);
      Compressor<double> c(comm, kLayout, parse_compression(spec), 5);
      std::vector<double> g(kLayout.nparams, 0.0);
      if (std::string(spec).starts_with("powersgd")) {
        g = random_vector(kLayout.nparams, 40 + static_cast<unsigned>(r));
        low_rank(g.data() + kLayout.offset[0], 20, 30, 1, 60 + static_cast<unsigned>(r));
        low_rank(g.data() + kLayout.offset[1], 30, 4, 1, 80 + static_cast<unsigned>(r));  // factored at R=2 too
      } else {
        for (size_t i = r; i < g.size(); i += 17) g[i] = static_cast<double>(i % 13) - 6.5;
      }
      ins[r] = g;
      try {
        c.reduce(g.data());
      } catch (const std::exception& e) {
        return std::string(e.what());
      }
      out[r] = g;
      return std::string();
    });
    INFO(spec);
    REQUIRE(error == "");
    CHECK(out[0] == out[1]);
    std::vector<double> sum(kLayout.nparams);
    for (size_t i = 0; i < sum.size(); i++) sum[i] = ins[0][i] + ins[1][i];
    CHECK(max_abs_diff(out[0], sum) < 1e-12);
  }
}

TEST_CASE("balanced sampler parts follow the weights and still partition the batch") {
  Sampler s(1000, 100, 3);
  s.start_epoch(0);
  s.set_weights({3, 1});
  CHECK(s.part_size(100, 0, 2) == 75);
  CHECK(s.part_size(100, 1, 2) == 25);
  s.set_weights({1, 2, 0.5, 4});
  std::vector<uint32_t> all;
  for (int r = 0; r < 4; r++) {
    auto part = s.shard(3, r, 4);
    all.insert(all.end(), part.begin(), part.end());
  }
  std::vector<uint32_t> whole = s.shard(3, 0, 1);  // weights for another size are ignored
  CHECK(all == whole);
  CHECK(whole.size() == 100);
}

TEST_CASE("--slow-rank parses RANK:FACTOR") {
  SlowRank r = parse_slow_rank("1:2.5");
  CHECK((r.rank == 1 && r.factor == 2.5));
  for (const char* bad : {"1", "x:2", "1:0.5", "-1:2", "1:2x", ":2"})
    CHECK_THROWS_WITH(parse_slow_rank(bad), Catch::Contains("RANK:FACTOR"));
}

TEST_CASE("parameter-server book: staleness counts the updates since the pull; the bound gates replies") {
  PsBook free(3, -1);
  // Workers 0, 1, 2 all pulled version 0; their pushes land in order.
  CHECK(free.push(0, 0) == 0);
  CHECK(free.push(1, 0) == 1);
  CHECK(free.push(2, 0) == 2);
  CHECK(free.push(0, 1) == 2);  // worker 0 pulled version 1; 1 and 2 came since
  CHECK(free.count() == 4);
  CHECK(free.staleness_sum() == 5);
  CHECK(free.staleness_max() == 2);
  CHECK(free.may_reply(0));
  CHECK(free.push(1, 4, false) == 0);  // an empty push: no update, no staleness, but a clock tick
  CHECK(free.version() == 4);
  CHECK(free.clock(1) == 2);
  CHECK(free.count() == 4);

  PsBook ssp(2, 1);  // k = 1: no worker more than one push ahead of the slowest
  ssp.push(0, 0);
  CHECK(ssp.may_reply(0));  // clocks 1, 0
  ssp.push(0, 1);
  CHECK_FALSE(ssp.may_reply(0));  // clocks 2, 0: worker 0 must wait for worker 1
  CHECK(ssp.may_reply(1));
  ssp.push(1, 0);
  CHECK(ssp.may_reply(0));  // clocks 2, 1
  CHECK(ssp.version() == 3);
}

TEST_CASE("top-k sends exactly the k largest entries, also when it ranks only a sample's candidates") {
  const Layout big({100, 100, 10});  // 11,110 entries: the threshold comes from every 2nd one
  coral::communicator comm = one_rank();
  for (double f : {0.001, 0.01, 0.3}) {
    INFO("F = " << f);
    Compressor<double> c(comm.get(), big, Compression{Compression::TopK, 0, f}, 1);
    std::vector<double> g = random_vector(big.nparams, 9);
    const std::vector<double> in = g;
    c.reduce(g.data());
    std::vector<double> mags;
    for (double v : in) mags.push_back(std::abs(v));
    std::sort(mags.begin(), mags.end(), std::greater<double>());
    const size_t k = static_cast<size_t>(std::ceil(f * static_cast<double>(big.nparams)));
    size_t sent = 0;
    for (size_t i = 0; i < g.size(); i++)
      if (g[i] != 0) {
        sent++;
        CHECK(std::abs(in[i]) >= mags[k - 1]);
      }
    CHECK(sent == k);
  }
}

TEST_CASE("PowerSGD: a factor column lost to a low-rank step comes back") {
  coral::communicator comm = one_rank();
  Compressor<double> c(comm.get(), kLayout, parse_compression("powersgd:2"), 3);
  REQUIRE(c.factored_layers() == 2);
  // Step 1: W0 of rank 1 and W1 zero, so orthonormalisation zeroes P columns (and so Q's).
  std::vector<double> g(kLayout.nparams, 0.0);
  low_rank(g.data() + kLayout.offset[0], 20, 30, 1, 21);
  c.reduce(g.data());
  // Step 2: both of rank 2, which R = 2 carries exactly only with every column alive again.
  std::fill(g.begin(), g.end(), 0.0);
  low_rank(g.data() + kLayout.offset[0], 20, 30, 2, 31);
  low_rank(g.data() + kLayout.offset[1], 30, 4, 2, 41);
  const std::vector<double> in = g;
  c.reduce(g.data());
  CHECK(max_abs_diff(g, in) < 1e-12);
}
