// Misuse of the C API across ranks: each gets a clear error soon, and nothing crashes: counts
// that differ by being 0 on one rank, a request that outlives its communicator, waits with
// "for ever" timeouts, and queries about calls no machine could make.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <climits>
#include <string>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

#include "common/thread_ranks.h"

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string query(coralComm_t comm, coralQuery_t q, const coralQueryArgs_t& a) {
  char v[64];
  if (coralCommQuery(comm, q, &a, v, sizeof v) != coralSuccess) return std::string("error: ") + coralGetLastError(comm);
  return v;
}

}  // namespace

TEST_CASE("a count of 0 on one rank against 4 fails at once, naming both counts") {
  // Rank 1's empty call sends nothing, so rank 0 would wait for its data until the timeout.
  setenv("CORAL_TIMEOUT", "60", 1);
  for (bool gather : {false, true}) {
    std::string message;
    const auto t0 = Clock::now();
    std::string err = on_ranks(2, [&](int rank, coralComm_t comm) -> std::string {
      float x[8] = {1, 2, 3, 4}, y[8] = {0};
      const size_t n = rank == 0 ? 4 : 0;
      const coralResult_t rc = gather ? coralAllGather(x, y, n, coralFloat32, comm, nullptr)
                                      : coralAllReduce(x, y, n, coralFloat32, coralSum, comm, nullptr);
      if (rank == 1) return "";  // its empty call has nothing to wait for
      if (rc != coralInvalidUsage) return "rank 0 got " + std::to_string(rc) + ": " + coralGetLastError(comm);
      message = coralGetLastError(comm);
      return "";
    });
    INFO(message);
    CHECK(err == "");
    CHECK_THAT(message, Catch::Contains("rank 1 completed") &&
                            Catch::Contains("the ranks passed different counts (0 and 4 elements)"));
    CHECK(since(t0) < 30);  // far from the 60 s timeout: the disagreement was seen, not waited out
  }
  unsetenv("CORAL_TIMEOUT");
}

TEST_CASE("a failed request waited for after coralCommDestroy reports its failure") {
  setenv("CORAL_TIMEOUT", "20", 1);
  coralUniqueId id;
  REQUIRE(coralGetUniqueId(&id) == coralSuccess);
  std::atomic<int> wrong{0};
  auto rank = [&](int r) {
    coralComm_t comm = nullptr;
    if (coralCommInitRank(&comm, 2, id, r) != coralSuccess) return void(++wrong);
    float x[4] = {1, 2, 3, 4}, y[4];
    coralRequest_t req = nullptr;
    // Different datatypes: the request fails on both ranks.
    if (coralIAllReduce(x, y, 4, r ? coralInt32 : coralFloat32, coralSum, comm, &req) != coralSuccess) ++wrong;
    if (coralCommDestroy(comm) != coralSuccess) ++wrong;  // drains the request first
    const coralResult_t rc = coralWait(req);
    const std::string msg = coralGetLastError(nullptr);
    if (rc == coralSuccess || msg.find("different collectives") == std::string::npos) ++wrong;
  };
  std::thread t0(rank, 0), t1(rank, 1);
  t0.join();
  t1.join();
  CHECK(wrong == 0);
  unsetenv("CORAL_TIMEOUT");
}

TEST_CASE("coralWaitFor with the largest timeout waits for the request") {
  std::string err = on_ranks(2, [&](int rank, coralComm_t comm) -> std::string {
    if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    float x = 1, y = 0;
    coralRequest_t req = nullptr;
    CALL(coralIAllReduce(&x, &y, 1, coralFloat32, coralSum, comm, &req));
    int done = 0;
    CALL(coralWaitFor(req, LONG_MAX, &done));
    if (!done) {
      coralWait(req);
      return fmt::format("rank {}: coralWaitFor(LONG_MAX) returned before the request finished", rank);
    }
    return y == 2 ? "" : fmt::format("rank {}: sum {}", rank, y);
  });
  CHECK(err == "");
}

TEST_CASE("coralCommQuery: rooted calls check the root, huge counts are priced without a huge schedule") {
  std::string err = on_ranks(2, [&](int rank, coralComm_t comm) -> std::string {
    coralQueryArgs_t a = CORAL_QUERY_ARGS_INITIALIZER;
    a.count = 1024;
    for (coralCollective_t c : {coralCollBroadcast, coralCollReduce, coralCollGather, coralCollScatter}) {
      a.collective = c;
      for (int root : {-5, 2}) {
        a.root = root;
        const std::string v = query(comm, coralQueryEstimateUs, a);
        if (v.find(fmt::format("args->root {} is out of range", root)) == std::string::npos)
          return fmt::format("rank {}: collective {} root {}: {}", rank, static_cast<int>(c), root, v);
      }
    }
    a.collective = coralCollAllReduce;
    a.root = 0;
    a.count = SIZE_MAX;
    if (query(comm, coralQueryEstimateUs, a).find("overflows") == std::string::npos)
      return "SIZE_MAX elements were priced";
    // 4 TiB of floats: a schedule pipelined chunk by chunk would hold millions of steps.
    a.count = size_t{1} << 40;
    const std::string huge = query(comm, coralQueryEstimateUs, a);
    a.count = size_t{1} << 39;
    const std::string half = query(comm, coralQueryEstimateUs, a);
    if (huge.rfind("error", 0) == 0 || half.rfind("error", 0) == 0) return huge + " / " + half;
    const double ratio = std::stod(huge) / std::stod(half);
    if (ratio < 1.99 || ratio > 2.01) return fmt::format("twice the bytes priced {} times as much", ratio);
    // Device calls before the first one connected its links: priced with the slot size they
    // will use, not a chunk of one element.
    a.count = 1 << 20;
    a.device = 1;
    const std::string chunk = query(comm, coralQueryChunkBytes, a);
    if (chunk.rfind("error", 0) == 0 || std::stoull(chunk) < 4096) return "device chunk " + chunk;
    return "";
  });
  CHECK(err == "");
}

TEST_CASE("a broadcast against an all-reduce: each rank's error names the other's call") {
  // The broadcast starts with its root check, an all-reduce of Coral's own: the error must not
  // present that as the user's all-reduce.
  setenv("CORAL_TIMEOUT", "20", 1);
  std::string messages[2];
  on_ranks(2, [&](int rank, coralComm_t comm) -> std::string {
    float x[4] = {1, 2, 3, 4}, y[4];
    const coralResult_t rc = rank == 0 ? coralBroadcast(x, y, 4, coralFloat32, 0, comm, nullptr)
                                       : coralAllReduce(x, y, 4, coralFloat32, coralSum, comm, nullptr);
    messages[rank] = rc == coralInvalidUsage ? coralGetLastError(comm) : "result " + std::to_string(rc);
    return "";
  });
  INFO(messages[0] + "\n" + messages[1]);
  CHECK_THAT(messages[0], Catch::Contains("sent data for 'allreduce float sum' while this rank runs 'broadcast (its "
                                          "root check)'"));
  CHECK_THAT(messages[1], Catch::Contains("sent data for 'broadcast (its root check)' while this rank runs "
                                          "'allreduce float sum'"));
  unsetenv("CORAL_TIMEOUT");
}

TEST_CASE("a timeout names the call with its arguments, algorithm and step") {
  setenv("CORAL_TIMEOUT", "2", 1);
  std::string message;
  on_ranks(2, [&](int rank, coralComm_t comm) -> std::string {
    if (rank == 1) {  // alive but absent: rank 0's wait can only time out
      std::this_thread::sleep_for(std::chrono::milliseconds(3500));
      return "";
    }
    float x[4] = {1, 2, 3, 4}, y[4];
    const coralResult_t rc = coralAllReduce(x, y, 4, coralFloat32, coralSum, comm, nullptr);
    message = rc == coralTimeout ? coralGetLastError(comm) : "result " + std::to_string(rc);
    return "";
  });
  CHECK_THAT(message, Catch::Matches(".*allreduce #1 \\(float sum, 16 B, [a-z]+ step [0-9]+ of [0-9]+\\) timed out: "
                                     "waited 2 s for rank 1.*"));
  unsetenv("CORAL_TIMEOUT");
}

TEST_CASE("a split's own exchange does not take a number among the user's collectives") {
  setenv("CORAL_TIMEOUT", "60", 1);
  std::string message;
  on_ranks(2, [&](int rank, coralComm_t comm) -> std::string {
    coralComm_t half = nullptr;
    CALL(coralCommSplit(comm, rank, 0, &half));
    coralCommDestroy(half);
    float x[4] = {1, 2, 3, 4}, y[4];
    const coralResult_t rc = coralAllReduce(x, y, rank == 0 ? 4 : 0, coralFloat32, coralSum, comm, nullptr);
    if (rank == 0) message = rc == coralInvalidUsage ? coralGetLastError(comm) : "result " + std::to_string(rc);
    return "";
  });
  CHECK_THAT(message, Catch::Contains("rank 1 completed allreduce #1 (float sum, 0 B)"));
  unsetenv("CORAL_TIMEOUT");
}

TEST_CASE("two processes passing the same rank are told so, not only that a rank is missing") {
  // Processes, not threads: a process numbers its communicators, so two threads' would differ.
  setenv("CORAL_TIMEOUT", "3", 1);
  coralUniqueId id;
  REQUIRE(coralGetUniqueId(&id) == coralSuccess);  // its store serves from this process
  std::string messages[2];
  pid_t pids[2];
  int out[2];
  for (int who = 0; who < 2; ++who) {
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    pids[who] = fork();
    if (pids[who] == 0) {
      close(fds[0]);
      coralComm_t comm = nullptr;
      const std::string m = coralCommInitRank(&comm, 2, id, 0) == coralSuccess ? "joined" : coralGetLastError(nullptr);
      (void)!write(fds[1], m.data(), m.size());
      _exit(0);
    }
    close(fds[1]);
    out[who] = fds[0];
  }
  for (int who = 0; who < 2; ++who) {
    char buf[1024];
    ssize_t n;
    while ((n = read(out[who], buf, sizeof buf)) > 0) messages[who].append(buf, static_cast<size_t>(n));
    close(out[who]);
    waitpid(pids[who], nullptr, 0);
  }
  INFO(messages[0] + "\n" + messages[1]);
  // One is refused at once (or on reading its own record back); the other waits for rank 1,
  // then says why nobody came.
  const char* refusal = "taken by another process already";
  const bool first_refused =
      messages[0].find(refusal) != std::string::npos || messages[0].find("is also taken by pid") != std::string::npos;
  const std::string& refused = first_refused ? messages[0] : messages[1];
  const std::string& other = first_refused ? messages[1] : messages[0];
  CHECK_THAT(refused, Catch::Contains(refusal) || Catch::Contains("is also taken by pid"));
  CHECK_THAT(other, Catch::Contains(refusal) || Catch::Contains("is also taken by pid") ||
                        Catch::Contains("another process took rank 0 too, so a rank is missing"));
  unsetenv("CORAL_TIMEOUT");
}
