// coralCommRevoke: a watchdog thread ends calls that would otherwise wait for the timeout, on
// this rank and its peers, and the communicator stays valid for the calls that follow.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "common/thread_ranks.h"

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

TEST_CASE("coralCommRevoke ends pending calls on this rank and its peers") {
  // The timeout is far away: a call that ends quickly ended because of the revoke.
  setenv("CORAL_TIMEOUT", "60", 1);
  std::atomic<bool> posted[2] = {false, false};
  std::string err = on_ranks(2, [&](int rank, coralComm_t comm) -> std::string {
    float buf[4] = {1, 2, 3, 4};
    // Both ranks receive and nobody sends: without a revoke each waits for the timeout.
    coralRequest_t req = nullptr;
    CALL(coralIRecv(buf, 4, coralFloat32, 1 - rank, comm, &req));
    posted[rank] = true;
    std::thread watchdog;
    if (rank == 0)
      watchdog = std::thread([&] {
        while (!posted[1]) std::this_thread::yield();
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        coralCommRevoke(comm);  // while this rank's own thread waits in coralWait below
      });
    const auto t0 = Clock::now();
    const coralResult_t rc = coralWait(req);
    const double waited = since(t0);
    if (watchdog.joinable()) watchdog.join();
    const std::string msg = coralGetLastError(comm);
    if (rc != coralRemoteError)
      return fmt::format("rank {}: coralWait gave {}, not coralRemoteError: {}", rank, static_cast<int>(rc), msg);
    if (waited > 20)
      return fmt::format("rank {}: the receive ended {:.1f} s after the start, not at the revoke", rank, waited);
    if (msg.find("rank 0 revoked") == std::string::npos)
      return fmt::format("rank {}: the error does not name the revoking rank: {}", rank, msg);
    // Later calls fail at once; the communicator says it failed, and can still be shrunk or freed.
    const auto t1 = Clock::now();
    if (coralAllReduce(buf, buf, 4, coralFloat32, coralSum, comm, nullptr) == coralSuccess)
      return fmt::format("rank {}: an all-reduce after the revoke succeeded", rank);
    if (since(t1) > 20) return fmt::format("rank {}: an all-reduce after the revoke waited {:.1f} s", rank, since(t1));
    coralResult_t async = coralSuccess;
    CALL(coralCommGetAsyncError(comm, &async));
    if (async != coralRemoteError)
      return fmt::format("rank {}: async error {}, not coralRemoteError", rank, static_cast<int>(async));
    return "";
  });
  unsetenv("CORAL_TIMEOUT");
  CHECK(err == "");
}

TEST_CASE("coralCommRevoke ends this rank's collective when no peer is in a call") {
  // Rank 1 stays out of every call until rank 0 is done: nothing can echo the abort back, so
  // rank 0's all-reduce must see its own communicator fail.
  setenv("CORAL_TIMEOUT", "60", 1);
  std::atomic<bool> rank0_done{false};
  std::string err = on_ranks(2, [&](int rank, coralComm_t comm) -> std::string {
    if (rank == 1) {
      while (!rank0_done) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return "";
    }
    std::vector<float> buf(1 << 16, 1.0f);
    coralRequest_t req = nullptr;
    CALL(coralIAllReduce(buf.data(), buf.data(), buf.size(), coralFloat32, coralSum, comm, &req));
    std::thread watchdog([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      coralCommRevoke(comm);
    });
    const auto t0 = Clock::now();
    const coralResult_t rc = coralWait(req);
    const double waited = since(t0);
    watchdog.join();
    rank0_done = true;
    const std::string msg = coralGetLastError(comm);
    if (rc != coralRemoteError)
      return fmt::format("rank 0: coralWait gave {}, not coralRemoteError: {}", static_cast<int>(rc), msg);
    if (waited > 20) return fmt::format("rank 0: the all-reduce ended {:.1f} s in, not at the revoke", waited);
    if (msg.find("rank 0 revoked") == std::string::npos) return "rank 0: the error does not name the revoke: " + msg;
    return "";
  });
  unsetenv("CORAL_TIMEOUT");
  CHECK(err == "");
}

TEST_CASE("coralCommRevoke refuses a null communicator") {
  CHECK(coralCommRevoke(nullptr) == coralInvalidArgument);
  CHECK(std::string(coralGetLastError(nullptr)).find("comm is NULL") != std::string::npos);
}
