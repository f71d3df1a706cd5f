// Microbenchmarks (Google Benchmark): reduction kernels per ISA x dtype x op against memcpy of
// the same bytes, folds (multi-source reduction against the pairwise chain), schedule construction up to 4096 ranks,
// store round trips and communicator bootstrap. Run: build/bench/coral-micro [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <cstring>
#include <thread>
#include <vector>

#include "bootstrap/mem_store.h"
#include "bootstrap/tcp_store.h"
#include "collectives/registry.h"
#include "core/communicator.h"
#include "kernels/reduce.h"

using namespace coral;

namespace {

// Arguments: isa, dtype, op, bytes. Bytes processed = 2 inputs read + 1 output written.
void BM_Reduce(benchmark::State& st) {
  auto isa = static_cast<kernels::Isa>(st.range(0));
  auto dt = static_cast<coralDataType_t>(st.range(1));
  auto op = static_cast<coralRedOp_t>(st.range(2));
  const size_t bytes = static_cast<size_t>(st.range(3));
  const kernels::Table* t = kernels::table_for(isa);
  if (!t) {
    st.SkipWithError("instruction set not available on this CPU");
    return;
  }
  std::vector<uint8_t> a(bytes, 1), b(bytes, 2), d(bytes);
  const size_t n = bytes / kernels::dtype_size(dt);
  for (auto _ : st) {
    t->reduce[dt][op](d.data(), a.data(), b.data(), n);
    benchmark::DoNotOptimize(d.data());
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * 3 * static_cast<int64_t>(bytes));
  st.SetLabel(std::string(t->name) + " " + kernels::dtype_name(dt) + " " + kernels::op_name(op));
}

void BM_Memcpy(benchmark::State& st) {
  const size_t bytes = static_cast<size_t>(st.range(0));
  std::vector<uint8_t> a(bytes, 1), d(bytes);
  for (auto _ : st) {
    std::memcpy(d.data(), a.data(), bytes);
    benchmark::DoNotOptimize(d.data());
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * 2 * static_cast<int64_t>(bytes));
}

// A fold of k float inputs of `bytes` each into dst (the active table): reduce_many, or (chain = 1)
// the pairwise reductions it replaces, one pass over dst per input. Bytes processed: k inputs.
void BM_Fold(benchmark::State& st) {
  const int k = static_cast<int>(st.range(0));
  const size_t bytes = static_cast<size_t>(st.range(1));
  const bool chain = st.range(2) != 0;
  const kernels::Table& t = kernels::active();
  std::vector<std::vector<uint8_t>> in(k, std::vector<uint8_t>(bytes, 1));
  std::vector<const void*> srcs;
  for (auto& v : in) srcs.push_back(v.data());
  std::vector<uint8_t> d(bytes);
  const size_t n = bytes / sizeof(float);
  for (auto _ : st) {
    if (chain) {
      t.reduce[coralFloat32][coralSum](d.data(), srcs[0], srcs[1], n);
      for (int j = 2; j < k; ++j) t.reduce[coralFloat32][coralSum](d.data(), d.data(), srcs[j], n);
    } else {
      t.reduce_many[coralFloat32][coralSum](d.data(), srcs.data(), k, n);
    }
    benchmark::DoNotOptimize(d.data());
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * k * static_cast<int64_t>(bytes));
  st.SetLabel(std::string(t.name) + (chain ? " pairwise chain" : " reduce_many"));
}

void reduce_args(benchmark::internal::Benchmark* b) {
  for (int isa : {0, 1, 2})
    for (int dt = 0; dt < coralNumTypes; ++dt)
      for (int op = 0; op < coralNumOps - 1; ++op)  // avg reduces like sum
        for (int64_t bytes : {int64_t(1) << 20, int64_t(64) << 20}) b->Args({isa, dt, op, bytes});
}

// Arguments: algorithm, ranks. Builds rank 0's schedule of a 1024-element-per-rank all-reduce.
void BM_BuildSchedule(benchmark::State& st) {
  auto algo = static_cast<collectives::Algo>(st.range(0));
  collectives::CollArgs a;
  a.coll = collectives::Coll::AllReduce;
  a.nranks = static_cast<int>(st.range(1));
  a.count = 1024 * static_cast<size_t>(a.nranks);
  a.chunk = 1 << 16;
  size_t steps = 0;
  for (auto _ : st) steps = collectives::build(a, algo).steps.size();
  st.counters["steps"] = static_cast<double>(steps);
  st.SetLabel(collectives::algo_name(algo));
}

void schedule_args(benchmark::internal::Benchmark* b) {
  for (auto algo : {collectives::Algo::Ring, collectives::Algo::RecursiveDoubling, collectives::Algo::TwoShot})
    for (int p : {8, 64, 512, 4096}) b->Args({static_cast<int64_t>(algo), p});
}

void BM_TcpStoreSetGet(benchmark::State& st) {
  auto secret = bootstrap::wire::random_secret();
  bootstrap::TcpStoreServer server(net::resolve("127.0.0.1", 0), secret, false, std::chrono::milliseconds(0));
  bootstrap::TcpStore client(net::resolve("127.0.0.1", server.port()), secret, std::chrono::seconds(5));
  bootstrap::Bytes v(64, 7);
  for (auto _ : st) {
    client.set("k", v);
    benchmark::DoNotOptimize(client.get("k", std::chrono::seconds(5)));
  }
}

void BM_TcpStoreConnect(benchmark::State& st) {
  auto secret = bootstrap::wire::random_secret();
  bootstrap::TcpStoreServer server(net::resolve("127.0.0.1", 0), secret, false, std::chrono::milliseconds(0));
  for (auto _ : st)
    bootstrap::TcpStore client(net::resolve("127.0.0.1", server.port()), secret, std::chrono::seconds(5));
}

// Communicator bootstrap for P thread ranks over the in-memory store (segments, links, barrier).
void BM_Bootstrap(benchmark::State& st) {
  const int p = static_cast<int>(st.range(0));
  int round = 0;
  for (auto _ : st) {
    auto store = std::make_shared<bootstrap::MemStore>();
    std::vector<std::thread> th;
    std::string prefix = "bench" + std::to_string(round++);
    for (int r = 0; r < p; ++r) th.emplace_back([&, r] { Communicator c(store, prefix, r, p); });
    for (auto& t : th) t.join();
  }
}

}  // namespace

BENCHMARK(BM_Reduce)->Apply(reduce_args)->MinTime(0.05)->UseRealTime();
BENCHMARK(BM_Fold)->ArgsProduct({{4, 8}, {8 << 10, 256 << 10, 4 << 20}, {0, 1}})->MinTime(0.05)->UseRealTime();
BENCHMARK(BM_Memcpy)->Arg(1 << 20)->Arg(64 << 20)->MinTime(0.05)->UseRealTime();
BENCHMARK(BM_BuildSchedule)->Apply(schedule_args)->MinTime(0.05);
BENCHMARK(BM_TcpStoreSetGet)->MinTime(0.1)->UseRealTime();
BENCHMARK(BM_TcpStoreConnect)->MinTime(0.1)->UseRealTime();
BENCHMARK(BM_Bootstrap)->Arg(2)->Arg(4)->MinTime(0.1)->UseRealTime();
BENCHMARK_MAIN();
