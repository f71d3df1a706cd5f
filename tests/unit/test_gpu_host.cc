// What of the GPU path runs without a GPU: the no-CUDA behaviour of the C API, the kernels'
// vector plan, and the cuda_ipc exchange record. tests/gpu/ holds the checks that need a GPU.
#include <coral/coral.h>
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "common/one_rank.h"
#include "core/gpu_state.h"
#include "gpu/runtime.h"
#include "kernels/cuda/plan.h"
#include "transport/cuda_ipc/memory.h"
#include "transport/transport.h"

using coral::kernels::cuda::plan_vectors;
using coral::kernels::cuda::VecPlan;

namespace {

VecPlan plan(std::initializer_list<uintptr_t> addrs, size_t es, size_t n) {
  const void* p[8];
  int k = 0;
  for (uintptr_t a : addrs) p[k++] = reinterpret_cast<const void*>(a);
  return plan_vectors(p, k, es, n);
}

}  // namespace

TEST_CASE("a CUDA stream without a usable GPU is a clear coralUnhandledCudaError") {
  if (coral::gpu::usable()) {
    WARN("a GPU is usable here: tests/gpu covers this machine");  // Catch2 2.x has no SKIP
    return;
  }
  INFO(coral::gpu::why_not());
  CHECK(!coral::gpu::why_not().empty());
  coralComm_t comm = one_rank_comm();
  float x[4] = {1, 2, 3, 4}, y[4] = {};
  void* fake_stream = reinterpret_cast<void*>(0x1);
  CHECK(coralAllReduce(x, y, 4, coralFloat32, coralSum, comm, fake_stream) == coralUnhandledCudaError);
  std::string msg = coralGetLastError(comm);
  INFO(msg);
  CHECK(msg.find("CUDA stream") != std::string::npos);
  CHECK(msg.find("coralAllReduce") != std::string::npos);
  CHECK(coralBroadcast(x, y, 4, coralFloat32, 0, comm, fake_stream) == coralUnhandledCudaError);
  // Nothing ran and nothing broke: y untouched, and host calls still work.
  CHECK(y[0] == 0.0f);
  coralResult_t async = coralInternalError;
  CHECK(coralCommGetAsyncError(comm, &async) == coralSuccess);
  CHECK(async == coralSuccess);
  CHECK(coralAllReduce(x, y, 4, coralFloat32, coralSum, comm, nullptr) == coralSuccess);
  CHECK(y[3] == 4.0f);
  CHECK(coralCommDestroy(comm) == coralSuccess);
}

TEST_CASE("host memory is never taken for device memory") {
  float x[4];
  CHECK(coral::gpu::device_of(x) == -1);
  CHECK(coral::gpu::device_of(nullptr) == -1);
#if CORAL_HAVE_CUDA
  CHECK(coral::gpu::built());
#else
  CHECK(!coral::gpu::built());
  CHECK_THROWS_AS(coral::gpu::Stream(), coral::Error);
#endif
}

TEST_CASE("the kernels' vector plan covers every element once") {
  SECTION("aligned pointers: all vectors but the tail") {
    VecPlan p = plan({0x1000, 0x2000, 0x3000}, 4, 1003);
    CHECK(p.head == 0);
    CHECK(p.body == 1000);
    CHECK(p.tail == 3);
  }
  SECTION("the same offset within 16 bytes: a scalar head brings all to a boundary") {
    VecPlan p = plan({0x1004, 0x2004}, 4, 100);
    CHECK(p.head == 3);
    CHECK(p.body == 96);
    CHECK(p.tail == 1);
  }
  SECTION("different offsets: all scalar") {
    VecPlan p = plan({0x1004, 0x2008}, 4, 100);
    CHECK(p.body == 0);
    CHECK(p.head + p.tail == 100);
  }
  SECTION("not even element-aligned: all scalar") {
    VecPlan p = plan({0x1001, 0x2001}, 4, 64);
    CHECK(p.body == 0);
    CHECK(p.head + p.tail == 64);
  }
  SECTION("fewer elements than the head") {
    VecPlan p = plan({0x100c}, 4, 1);
    CHECK(p.head == 1);
    CHECK(p.body + p.tail == 0);
  }
  SECTION("every size and offset sums to n, with vectors on 16-byte boundaries") {
    for (size_t es : {1, 2, 4, 8})
      for (uintptr_t off = 0; off < 16; off += es)
        for (size_t n : {0, 1, 2, 7, 8, 15, 16, 17, 31, 100, 1001}) {
          VecPlan p = plan({0x1000 + off, 0x9000 + off}, es, n);
          INFO("es " << es << " off " << off << " n " << n);
          CHECK(p.head + p.body + p.tail == n);
          CHECK(p.body % (16 / es) == 0);
          if (p.body) CHECK((0x1000 + off + p.head * es) % 16 == 0);
        }
  }
}

TEST_CASE("the cuda_ipc record round-trips and names a bad one") {
  using namespace coral::transport::cuda_ipc;
  SlotsRecord r{1234, 3, 1 << 24, std::string(128, 'a'), 0x7f0012340000};
  SlotsRecord back = decode(encode(r), 5);
  CHECK(back.pid == 1234);
  CHECK(back.device == 3);
  CHECK(back.ring_bytes == size_t{1} << 24);
  CHECK(back.handle_hex == r.handle_hex);
  CHECK(back.addr == r.addr);
  for (std::string bad :
       {std::string(""), std::string("1 2 3"), "1 2 3 " + std::string(127, 'a') + " 0",
        "1 2 3 " + std::string(128, 'g') + " 0", std::string("x 2 3 ") + std::string(128, 'a') + " 0"}) {
    INFO(bad);
    try {
      decode(bad, 5);
      FAIL("accepted a malformed record");
    } catch (const coral::Error& e) {
      CHECK(e.code() == coralRemoteError);
      CHECK(std::string(e.what()).find("rank 5") != std::string::npos);
    }
  }
}

TEST_CASE("CORAL_TRANSPORT=cuda_ipc says that cuda_ipc is for device buffers") {
  setenv("CORAL_TRANSPORT", "cuda_ipc", 1);
  CHECK_THROWS_WITH(coral::transport::registry(), Catch::Contains("device buffers") && Catch::Contains("tcp"));
  unsetenv("CORAL_TRANSPORT");
  CHECK(!coral::transport::registry().empty());
}

namespace {
std::vector<std::pair<void*, size_t>> g_live;  // what the counting allocator handed out
size_t g_freed = 0;
void* counting_alloc(size_t bytes) {
  void* p = std::malloc(bytes);
  g_live.emplace_back(p, bytes);
  return p;
}
void counting_free(void* p) {
  if (!p) return;
  ++g_freed;
  std::free(p);
}
}  // namespace

TEST_CASE("a grow buffer frees nothing until it goes, and at least doubles") {
  g_live.clear();
  g_freed = 0;
  {
    coral::GrowBuffer<counting_alloc, counting_free> b;
    void* first = b.get(100);
    CHECK(b.get(60) == first);
    CHECK(g_live.size() == 1);
    void* second = b.get(150);  // a call still running may hold `first`: it must stay
    CHECK(second != first);
    CHECK(g_freed == 0);
    REQUIRE(g_live.size() == 2);
    CHECK(g_live[1].second == 200);  // doubled: what is kept stays under the final size
    CHECK(b.get(200) == second);
    CHECK(b.get(1000) != second);
    CHECK(g_live.back().second == 1000);
    CHECK(g_freed == 0);
  }
  CHECK(g_freed == 3);
}
