// The same measurement as allreduce_coral.c over Gloo's ring, ring_chunked and halving_doubling
// (TCP on loopback; Gloo's algorithms are in place). Run under coral-run, which provides
// CORAL_RANK/CORAL_SIZE and a per-job secret used to name the file rendezvous.
// Usage: coral-run -n P allreduce_gloo ALGO [bytes...]   ALGO: ring | ring_chunked | halving_doubling
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

extern "C" {
#include "../allreduce_common.h"
}

namespace {

template <class Algo, class T>
void run(const std::shared_ptr<gloo::Context>& ctx, std::vector<T>& v, const gloo::ReductionFunction<T>* fn = nullptr) {
  std::vector<T*> ptrs{v.data()};
  if (fn)
    Algo(ctx, ptrs, static_cast<int>(v.size()), fn).run();
  else
    Algo(ctx, ptrs, static_cast<int>(v.size())).run();
}

double max_over_ranks(const std::shared_ptr<gloo::Context>& ctx, double x) {
  std::vector<double> v{x};
  run<gloo::AllreduceRing<double>>(ctx, v, gloo::ReductionFunction<double>::max);
  return v[0];
}

}  // namespace

int main(int argc, char** argv) {
  const char* r = std::getenv("CORAL_RANK");
  const char* s = std::getenv("CORAL_SIZE");
  const char* secret = std::getenv("CORAL_SECRET");
  if (!r || !s || !secret || argc < 2) {
    std::fprintf(stderr, "usage: coral-run -n P %s ring|ring_chunked|halving_doubling [bytes...]\n", argv[0]);
    return 2;
  }
  const std::string algo = argv[1];
  const int rank = std::atoi(r), size = std::atoi(s);
  const std::string dir = std::string("/tmp/coral-gloo-") + std::string(secret).substr(0, 16);
  mkdir(dir.c_str(), 0700);
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(dir);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, size);
  ctx->connectFullMesh(store, dev);
  size_t sizes[64];
  size_t ns = bench_sizes(argc - 1, argv + 1, sizes, 64);
  for (size_t k = 0; k < ns; ++k) {
    size_t count = sizes[k] / 4 ? sizes[k] / 4 : 1;
    std::vector<float> buf(count);
    auto init = [&] {
      for (size_t i = 0; i < count; ++i) buf[i] = static_cast<float>(rank + i % 7);
    };
    auto once = [&] {
      if (algo == "ring")
        run<gloo::AllreduceRing<float>>(ctx, buf);
      else if (algo == "ring_chunked")
        run<gloo::AllreduceRingChunked<float>>(ctx, buf);
      else
        run<gloo::AllreduceHalvingDoubling<float>>(ctx, buf);
    };
    init();
    for (int w = 0; w < 3; ++w) once();
    double c0 = bench_now();
    for (int w = 0; w < 3; ++w) once();
    int iters = bench_iters(max_over_ranks(ctx, (bench_now() - c0) / 3));
    double t0 = bench_now();
    for (int it = 0; it < iters; ++it) once();
    double t = max_over_ranks(ctx, (bench_now() - t0) / iters);
    init();
    once();
    // Exact check: inputs are small integers, so every element's sum is known.
    for (size_t i = 0; i < count; ++i)
      if (buf[i] != static_cast<float>(size * (size - 1) / 2 + size * static_cast<int>(i % 7))) {
        std::fprintf(stderr, "gloo %s: wrong result at %zu\n", algo.c_str(), i);
        return 1;
      }
    if (rank == 0) bench_print(("gloo-" + algo).c_str(), size, count * 4, t);
  }
  return 0;
}
