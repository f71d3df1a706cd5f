// Bad arguments return coralInvalidArgument with a message naming the problem; nothing crashes.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include <coral/coral.h>
#include <coral/coral_device.h>
#include <coral/coral.hpp>

#include "common/one_rank.h"

namespace {

void expect_invalid(coralResult_t rc, coralComm_t comm, const char* needle) {
  CHECK(rc == coralInvalidArgument);
  std::string msg = coralGetLastError(comm);
  INFO(msg);
  CHECK(msg.find(needle) != std::string::npos);
}

}  // namespace

TEST_CASE("result codes and strings match NCCL's numbering") {
  CHECK(coralSuccess == 0);
  CHECK(coralInvalidArgument == 4);
  CHECK(coralInProgress == 7);
  CHECK(coralTimeout == 8);
  CHECK(coralBfloat16 == 9);
  CHECK(coralAvg == 4);
  CHECK(std::string(coralGetErrorString(coralRemoteError)).find("remote") != std::string::npos);
  int v = 0;
  CHECK(coralGetVersion(&v) == coralSuccess);
  CHECK(v == CORAL_VERSION_CODE);
  CHECK(coralGetVersion(nullptr) == coralInvalidArgument);
}

TEST_CASE("bad arguments are rejected with a message") {
  coralComm_t comm = one_rank_comm();
  float x[4] = {1, 2, 3, 4}, y[4];
  expect_invalid(coralAllReduce(x, y, 4, coralFloat32, coralSum, nullptr, nullptr), nullptr, "comm is NULL");
  expect_invalid(coralAllReduce(nullptr, y, 4, coralFloat32, coralSum, comm, nullptr), comm, "sendbuff");
  expect_invalid(coralAllReduce(x, nullptr, 4, coralFloat32, coralSum, comm, nullptr), comm, "recvbuff");
  expect_invalid(coralAllReduce(x, y, 4, static_cast<coralDataType_t>(42), coralSum, comm, nullptr), comm, "datatype");
  expect_invalid(coralAllReduce(x, y, 4, coralFloat32, static_cast<coralRedOp_t>(77), comm, nullptr), comm, "op");
  expect_invalid(coralAllReduce(x, y, SIZE_MAX / 2, coralFloat32, coralSum, comm, nullptr), comm, "overflow");
  expect_invalid(coralReduceScatter(x, y, SIZE_MAX / 4, coralFloat64, coralSum, comm, nullptr), comm, "overflow");
  expect_invalid(coralBroadcast(x, y, 4, coralFloat32, 1, comm, nullptr), comm, "root 1 is out of range");
  expect_invalid(coralReduce(x, y, 4, coralFloat32, coralSum, -1, comm, nullptr), comm, "root -1");
  expect_invalid(coralSend(x, 4, coralFloat32, 5, comm, nullptr), comm, "peer 5");
  expect_invalid(coralIAllReduce(x, y, 4, coralFloat32, coralSum, comm, nullptr), comm, "request");
  expect_invalid(coralWait(nullptr), nullptr, "request");
  expect_invalid(coralCommCount(comm, nullptr), comm, "count");
  // Zero elements with NULL buffers is legal, and the communicator still works afterwards.
  CHECK(coralAllReduce(nullptr, nullptr, 0, coralFloat32, coralSum, comm, nullptr) == coralSuccess);
  CHECK(coralAllReduce(x, y, 4, coralFloat32, coralAvg, comm, nullptr) == coralSuccess);
  CHECK(y[3] == 4.0f);
  coralResult_t async;
  CHECK(coralCommGetAsyncError(comm, &async) == coralSuccess);
  CHECK(async == coralSuccess);
  CHECK(coralCommDestroy(comm) == coralSuccess);
}

TEST_CASE("init rejects bad ranks and foreign ids") {
  coralUniqueId id;
  REQUIRE(coralGetUniqueId(&id) == coralSuccess);
  coralComm_t comm;
  expect_invalid(coralCommInitRank(&comm, 2, id, 2), nullptr, "rank 2");
  expect_invalid(coralCommInitRank(&comm, 0, id, 0), nullptr, "nranks");
  expect_invalid(coralCommInitRank(nullptr, 1, id, 0), nullptr, "comm");
  coralUniqueId junk{};
  expect_invalid(coralCommInitRank(&comm, 1, junk, 0), nullptr, "coralGetUniqueId");
}

TEST_CASE("C++ wrapper: RAII, spans, exceptions carry the message") {
  coralUniqueId id = coral::communicator::unique_id();
  coral::communicator comm(1, id, 0);
  CHECK(comm.size() == 1);
  std::vector<double> v = {1.5, 2.5};
  comm.all_reduce(std::span<double>(v), coralMax);
  CHECK(v[1] == 2.5);
  auto req = comm.iall_reduce(std::span<double>(v));
  req.wait();
  std::vector<double> big(3);
  try {
    comm.all_gather(std::span<const double>(v), std::span<double>(big));
    FAIL("size mismatch accepted");
  } catch (const coral::error& e) {
    CHECK(e.code() == coralInvalidArgument);
  }
  try {
    comm.broadcast(std::span<double>(v), 3);
    FAIL("bad root accepted");
  } catch (const coral::error& e) {
    CHECK(std::string(e.what()).find("root 3") != std::string::npos);
  }
}

TEST_CASE("coralCommQuery answers what a call runs and rejects bad queries") {
  coralComm_t comm = one_rank_comm();
  char v[64];
  coralQueryArgs_t a = CORAL_QUERY_ARGS_INITIALIZER;
  a.peer = 0;
  REQUIRE(coralCommQuery(comm, coralQueryTransport, &a, v, sizeof v) == coralSuccess);
  CHECK(std::string(v) == "self");
  a.count = 1 << 20;
  REQUIRE(coralCommQuery(comm, coralQueryAlgorithm, &a, v, sizeof v) == coralSuccess);
  CHECK(!std::string(v).empty());
  REQUIRE(coralCommQuery(comm, coralQueryChunkBytes, &a, v, sizeof v) == coralSuccess);
  CHECK(std::stoull(v) > 0);
  REQUIRE(coralCommQuery(comm, coralQueryTuning, &a, v, sizeof v) == coralSuccess);
  CHECK(std::string(v) == "0");  // trials are off by default
  REQUIRE(coralCommQuery(comm, coralQueryTrialPicks, nullptr, v, sizeof v) == coralSuccess);
  CHECK(std::string(v).empty());
  REQUIRE(coralCommQuery(comm, coralQueryEstimateUs, &a, v, sizeof v) == coralSuccess);
  CHECK(std::stod(v) == 0);  // one rank sends nothing: the model prices messages only

  a.peer = 1;
  expect_invalid(coralCommQuery(comm, coralQueryTransport, &a, v, sizeof v), comm, "args->peer 1 is not a rank");
  a.peer = 0;
  expect_invalid(coralCommQuery(comm, coralQueryTransport, &a, v, 2), comm, "size 2 is too small");
  expect_invalid(coralCommQuery(comm, coralQueryAlgorithm, nullptr, v, sizeof v), comm, "args is NULL");
  expect_invalid(coralCommQuery(comm, coralQueryAlgorithm, &a, nullptr, 0), comm, "value is NULL");
  expect_invalid(coralCommQuery(comm, static_cast<coralQuery_t>(99), &a, v, sizeof v), comm, "query 99");
  a.collective = static_cast<coralCollective_t>(42);
  expect_invalid(coralCommQuery(comm, coralQueryAlgorithm, &a, v, sizeof v), comm, "args->collective 42");
  a.collective = coralCollAllReduce;
  a.datatype = static_cast<coralDataType_t>(77);
  expect_invalid(coralCommQuery(comm, coralQueryAlgorithm, &a, v, sizeof v), comm, "args->datatype 77");
  expect_invalid(coralCommQuery(nullptr, coralQueryTrialPicks, nullptr, v, sizeof v), nullptr, "comm is NULL");
  CHECK(coralCommDestroy(comm) == coralSuccess);
}

TEST_CASE("bitwise ops take integer types and refuse float types, naming both") {
  coralComm_t comm = one_rank_comm();
  int32_t i[3] = {6, 5, 3}, o[3] = {0, 0, 0};
  REQUIRE(coralAllReduce(i, o, 3, coralInt32, coralBxor, comm, nullptr) == coralSuccess);
  CHECK((o[0] == 6 && o[1] == 5 && o[2] == 3));  // one rank: its own values
  float f[2] = {1, 2}, g[2];
  expect_invalid(coralAllReduce(f, g, 2, coralFloat32, coralBand, comm, nullptr), comm,
                 "op band is bitwise, for integer types; datatype float is not one");
  expect_invalid(coralReduce(f, g, 2, coralFloat64, coralBor, 0, comm, nullptr), comm, "op bor is bitwise");
  expect_invalid(coralAllReduce(i, o, 3, coralInt32, static_cast<coralRedOp_t>(coralBxor + 1), comm, nullptr), comm,
                 "invalid reduction op");
  CHECK(coralCommDestroy(comm) == coralSuccess);
}

TEST_CASE("coralCommInitRankConfig: bad configs are named, blocking = 0 finishes in the background") {
  coralUniqueId id;
  REQUIRE(coralGetUniqueId(&id) == coralSuccess);
  coralComm_t comm = nullptr;
  coralConfig_t bad = CORAL_CONFIG_INITIALIZER;
  bad.magic = 0;
  expect_invalid(coralCommInitRankConfig(&comm, 1, id, 0, &bad), nullptr, "CORAL_CONFIG_INITIALIZER");
  coralConfig_t c = CORAL_CONFIG_INITIALIZER;
  c.blocking = 2;
  expect_invalid(coralCommInitRankConfig(&comm, 1, id, 0, &c), nullptr, "config->blocking is 2");
  c.blocking = CORAL_CONFIG_UNDEF_INT;
  c.timeoutSeconds = -3;
  expect_invalid(coralCommInitRankConfig(&comm, 1, id, 0, &c), nullptr, "config->timeoutSeconds is -3");
  CHECK(comm == nullptr);

  c = CORAL_CONFIG_INITIALIZER;
  c.blocking = 0;
  REQUIRE(coralCommInitRankConfig(&comm, 1, id, 0, &c) == coralInProgress);
  REQUIRE(comm != nullptr);
  coralResult_t state = coralInProgress;
  for (int i = 0; i < 10000 && state == coralInProgress; ++i) {
    REQUIRE(coralCommGetAsyncError(comm, &state) == coralSuccess);
    if (state == coralInProgress) {
      int n = 0;  // meanwhile calls say so, and do nothing
      CHECK(coralCommCount(comm, &n) == coralInProgress);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  REQUIRE(state == coralSuccess);
  int v = 5, out = 0;
  CHECK(coralAllReduce(&v, &out, 1, coralInt32, coralSum, comm, nullptr) == coralSuccess);
  CHECK(out == 5);
  CHECK(coralCommDestroy(comm) == coralSuccess);
}

TEST_CASE("coralCommAbort gives up a creation still waiting for its peers at once") {
  coralUniqueId id;
  REQUIRE(coralGetUniqueId(&id) == coralSuccess);
  coralConfig_t c = CORAL_CONFIG_INITIALIZER;
  c.blocking = 0;
  c.timeoutSeconds = 60;
  coralComm_t comm = nullptr;
  // Rank 1 of 2 never comes: the creation would wait the full minute.
  REQUIRE(coralCommInitRankConfig(&comm, 2, id, 0, &c) == coralInProgress);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  coralResult_t state = coralSuccess;
  REQUIRE(coralCommGetAsyncError(comm, &state) == coralSuccess);
  CHECK(state == coralInProgress);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(coralCommAbort(comm) == coralSuccess);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
}

TEST_CASE("config->timeoutSeconds bounds this communicator's waits, blocking or not") {
  for (int blocking : {1, 0}) {
    INFO("blocking " << blocking);
    coralUniqueId id;
    REQUIRE(coralGetUniqueId(&id) == coralSuccess);
    coralConfig_t c = CORAL_CONFIG_INITIALIZER;
    c.blocking = blocking;
    c.timeoutSeconds = 1;
    coralComm_t comm = nullptr;
    const auto t0 = std::chrono::steady_clock::now();
    // Rank 0 of 2 whose rank 1 never comes: creation times out after about a second.
    coralResult_t rc = coralCommInitRankConfig(&comm, 2, id, 0, &c);
    if (!blocking) {
      REQUIRE(rc == coralInProgress);
      do {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        REQUIRE(coralCommGetAsyncError(comm, &rc) == coralSuccess);
      } while (rc == coralInProgress);
      CHECK(std::string(coralGetLastError(comm)).find("rank") != std::string::npos);
      int n = 0;
      CHECK(coralCommCount(comm, &n) == rc);  // the creation's failure, again
      CHECK(coralCommDestroy(comm) == coralSuccess);
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(rc == coralTimeout);
    CHECK(s < 30);  // not CORAL_TIMEOUT's 300 s
  }
}

TEST_CASE("coral_device.h: bad arguments are named; without a GPU every allocation says why") {
  int count = -1, available = -1;
  REQUIRE(coralDeviceCount(&count) == coralSuccess);
  CHECK(count >= 0);
  char why[512];
  REQUIRE(coralDeviceAvailable(&available, why, sizeof why) == coralSuccess);
  CHECK(available == (count > 0 ? 1 : 0));
  expect_invalid(coralDeviceCount(nullptr), nullptr, "count is NULL");
  if (count > 0)
    expect_invalid(coralDeviceSet(count + 5), nullptr, "out of range");
  else
    CHECK(coralDeviceSet(0) == coralUnhandledCudaError);
  expect_invalid(coralDeviceMalloc(nullptr, 16), nullptr, "ptr is NULL");
  void* p = nullptr;
  if (count == 0) {
    CHECK(std::string(why).size() > 0);
    CHECK(coralDeviceMalloc(&p, 16) == coralUnhandledCudaError);
    CHECK(std::string(coralGetLastError(nullptr)).find("no usable GPU") != std::string::npos);
  } else {
    REQUIRE(coralDeviceMalloc(&p, 16) == coralSuccess);
    int host = 0;
    CHECK(coralDeviceFree(&host) == coralInvalidArgument);  // host memory is refused
    CHECK(coralDeviceFree(p) == coralSuccess);
  }
  CHECK(coralDeviceFree(nullptr) == coralSuccess);
}

TEST_CASE("coralIBarrier completes only once every rank has entered it") {
  coralUniqueId id;
  REQUIRE(coralGetUniqueId(&id) == coralSuccess);
  std::atomic<bool> rank0_entered{false};
  std::atomic<int> failures{0};
  auto rank = [&](int r) {
    coralComm_t comm = nullptr;
    if (coralCommInitRank(&comm, 2, id, r) != coralSuccess) {
      ++failures;
      return;
    }
    if (r == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      rank0_entered = true;
    }
    coralRequest_t req = nullptr;
    if (coralIBarrier(comm, &req) != coralSuccess || coralWait(req) != coralSuccess) ++failures;
    if (r == 1 && !rank0_entered) ++failures;  // left the barrier before rank 0 entered it
    coralCommDestroy(comm);
  };
  std::thread t0(rank, 0), t1(rank, 1);
  t0.join();
  t1.join();
  CHECK(failures == 0);
  coralComm_t comm = one_rank_comm();
  expect_invalid(coralIBarrier(comm, nullptr), comm, "request is NULL");
  CHECK(coralCommDestroy(comm) == coralSuccess);
}
