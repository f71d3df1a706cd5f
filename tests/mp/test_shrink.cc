// coralCommShrink after kill -9: ranks die mid all-reduce (rank 0, which serves the rendezvous
// store, among them), the survivors see the failure, shrink past the dead and run exact
// all-reduces on the new communicator, over shared memory and over TCP.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include <coral/coral.h>

#include "common/forked.h"

namespace {

using Clock = std::chrono::steady_clock;

// The survivor's report: "ok <new rank> <new size>", or "<code> <message>".
// The failed ranks coralCommGetFailedRanks names, once two looks 20 ms apart agree (at most 5 s).
std::vector<int> ask_failed(coralComm_t comm) {
  std::vector<int> seen;
  for (int look = 0; look < 250; ++look) {
    int room = 16;
    std::vector<int> now(static_cast<size_t>(room));
    if (coralCommGetFailedRanks(comm, now.data(), &room) != coralSuccess) return {-1};
    now.resize(static_cast<size_t>(room));
    if (!now.empty() && now == seen) return now;
    seen = now;
    usleep(20 * 1000);
  }
  return seen;
}

// mine: the exclude list; empty with `ask`: whatever coralCommGetFailedRanks says, which must be
// the dead.
std::string survive(coralComm_t comm, int rank, int nranks, const std::vector<int>& dead, const std::vector<int>& given,
                    bool ask) {
  std::vector<int> mine = given;
  std::vector<int32_t> buf(1 << 20, 1);
  coralResult_t rc = coralSuccess;
  auto start = Clock::now();
  while (rc == coralSuccess && Clock::now() - start < std::chrono::seconds(60))
    rc = coralAllReduce(buf.data(), buf.data(), buf.size(), coralInt32, coralSum, comm, nullptr);
  if (rc == coralSuccess) return "the all-reduces never failed";
  if (ask) {
    mine = ask_failed(comm);
    if (mine != dead) {
      std::string got;
      for (int q : mine) got += " " + std::to_string(q);
      return "coralCommGetFailedRanks gave" + got;
    }
  }
  coralComm_t small = nullptr;
  rc = coralCommShrink(comm, mine.data(), static_cast<int>(mine.size()), &small);
  if (rc != coralSuccess) return std::to_string(rc) + " " + coralGetLastError(comm);
  int r, n;
  coralCommUserRank(small, &r);
  coralCommCount(small, &n);
  // Exact: the survivors' old ranks + 1, summed, at every index (a count that is not a power of 2).
  const size_t count = (1 << 20) + 3;
  std::vector<int64_t> x(count), y(count);
  int64_t want = 0;
  for (int q = 0; q < nranks; ++q)
    if (std::find(dead.begin(), dead.end(), q) == dead.end()) want += q + 1;
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < count; ++i) x[i] = (rank + 1) * static_cast<int64_t>(i % 5 + 1);
    rc = coralAllReduce(x.data(), y.data(), count, coralInt64, coralSum, small, nullptr);
    if (rc != coralSuccess) return std::to_string(rc) + " after shrink: " + coralGetLastError(small);
    for (size_t i = 0; i < count; ++i)
      if (y[i] != want * static_cast<int64_t>(i % 5 + 1))
        return "wrong sum at " + std::to_string(i) + ": " + std::to_string(y[i]);
  }
  coralCommDestroy(small);
  return "ok " + std::to_string(r) + " " + std::to_string(n);
}

struct Run {
  std::vector<std::string> reports;  // by old rank; "died" for the dead
};

// lists[r]: what rank r passes as excludeRanks (the dead, unless a test says otherwise).
Run run(int nranks, const std::vector<int>& dead, const std::vector<std::vector<int>>& lists, const char* transport,
        bool ask = false) {
  setenv("CORAL_TIMEOUT", "20", 1);
  if (transport)
    setenv("CORAL_TRANSPORT", transport, 1);
  else
    unsetenv("CORAL_TRANSPORT");
  Run out;
  out.reports = run_forked(
      nranks, [&](int r, coralComm_t comm) { return survive(comm, r, nranks, dead, lists[r], ask); },
      [&](const std::vector<pid_t>& pids) {
        usleep(200 * 1000);  // mid all-reduce
        for (int d : dead) kill(pids[d], SIGKILL);
      });
  return out;
}

void expect_shrunk(int nranks, const std::vector<int>& dead, const char* transport, bool ask = false) {
  std::vector<std::vector<int>> lists(nranks, dead);
  Run r = run(nranks, dead, lists, transport, ask);
  int next = 0;
  for (int q = 0; q < nranks; ++q) {
    if (std::find(dead.begin(), dead.end(), q) != dead.end()) continue;
    INFO("rank " << q << " (" << (transport ? transport : "auto") << ")");
    CHECK(r.reports[q] == "ok " + std::to_string(next++) + " " + std::to_string(nranks - dead.size()));
  }
}

}  // namespace

TEST_CASE("shrink past one dead rank, P=4, shared memory") {
  expect_shrunk(4, {2}, nullptr);
  expect_shrunk(4, {0}, nullptr);  // the store's host
}

TEST_CASE("shrink past dead ranks, P=4 and P=6, one and two, shared memory") {
  expect_shrunk(6, {0, 4}, nullptr);
  expect_shrunk(6, {5}, nullptr);
  expect_shrunk(4, {1, 2}, nullptr);
}

TEST_CASE("shrink past dead ranks over TCP") {
  expect_shrunk(4, {3}, "tcp");
  expect_shrunk(4, {0, 3}, "tcp");
  expect_shrunk(6, {2}, "tcp");
  expect_shrunk(6, {0, 1}, "tcp");
}

TEST_CASE("survivors passing different exclude lists all fail with coralInvalidUsage") {
  std::vector<std::vector<int>> lists = {{3}, {3}, {1, 3}, {}};
  Run r = run(4, {3}, lists, nullptr);
  for (int q = 0; q < 3; ++q) {
    INFO("rank " << q << ": " << r.reports[q]);
    CHECK(r.reports[q].rfind(std::to_string(coralInvalidUsage) + " ", 0) == 0);
    CHECK(r.reports[q].find("exclude") != std::string::npos);
  }
}

TEST_CASE("survivors learn who died from coralCommGetFailedRanks, and shrink past them") {
  expect_shrunk(4, {2}, nullptr, true);
  expect_shrunk(6, {0, 4}, nullptr, true);
  expect_shrunk(4, {0, 3}, "tcp", true);
  expect_shrunk(6, {2}, "tcp", true);
}

TEST_CASE("coralCommGetFailedRanks: none on a healthy communicator, and its arguments checked") {
  coralUniqueId id;
  REQUIRE(coralGetUniqueId(&id) == coralSuccess);
  coralComm_t comm = nullptr;
  REQUIRE(coralCommInitRank(&comm, 1, id, 0) == coralSuccess);
  int ranks[4] = {7, 7, 7, 7}, count = 4;
  CHECK(coralCommGetFailedRanks(comm, ranks, &count) == coralSuccess);
  CHECK(count == 0);
  CHECK(ranks[0] == 7);
  CHECK(coralCommGetFailedRanks(comm, ranks, nullptr) == coralInvalidArgument);
  count = -1;
  CHECK(coralCommGetFailedRanks(comm, ranks, &count) == coralInvalidArgument);
  count = 2;
  CHECK(coralCommGetFailedRanks(comm, nullptr, &count) == coralInvalidArgument);
  count = 0;
  CHECK(coralCommGetFailedRanks(comm, nullptr, &count) == coralSuccess);
  CHECK(coralCommGetFailedRanks(nullptr, ranks, &count) == coralInvalidArgument);
  coralCommDestroy(comm);
}
