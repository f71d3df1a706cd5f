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

namespace {

using Clock = std::chrono::steady_clock;

std::string read_line(int fd) {
  std::string s;
  char c;
  while (read(fd, &c, 1) == 1 && c != '\n') s += c;
  return s;
}

// The survivor's report: "ok <new rank> <new size>", or "<code> <message>".
std::string survive(coralComm_t comm, int rank, int nranks, const std::vector<int>& dead,
                    const std::vector<int>& mine) {
  std::vector<int32_t> buf(1 << 20, 1);
  coralResult_t rc = coralSuccess;
  auto start = Clock::now();
  while (rc == coralSuccess && Clock::now() - start < std::chrono::seconds(60))
    rc = coralAllReduce(buf.data(), buf.data(), buf.size(), coralInt32, coralSum, comm, nullptr);
  if (rc == coralSuccess) return "the all-reduces never failed";
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
  std::vector<std::string> reports;  // by old rank; "" for the dead
};

// lists[r]: what rank r passes as excludeRanks (the dead, unless a test says otherwise).
Run run(int nranks, const std::vector<int>& dead, const std::vector<std::vector<int>>& lists, const char* transport) {
  setenv("CORAL_TIMEOUT", "20", 1);
  if (transport)
    setenv("CORAL_TRANSPORT", transport, 1);
  else
    unsetenv("CORAL_TRANSPORT");
  std::vector<int> id_r(nranks), id_w(nranks);
  for (int r = 0; r < nranks; ++r) {
    int p[2];
    REQUIRE(pipe(p) == 0);
    id_r[r] = p[0];
    id_w[r] = p[1];
  }
  std::vector<pid_t> pids;
  std::vector<int> reports;
  for (int r = 0; r < nranks; ++r) {
    int rep[2];
    REQUIRE(pipe(rep) == 0);
    pid_t pid = fork();
    if (pid == 0) {
      close(rep[0]);
      coralUniqueId id;
      if (r == 0) {  // rank 0's process serves the store
        if (coralGetUniqueId(&id) != coralSuccess) _exit(90);
        for (int q = 1; q < nranks; ++q) (void)!write(id_w[q], &id, sizeof id);
      } else if (read(id_r[r], &id, sizeof id) != sizeof id) {
        _exit(91);
      }
      coralComm_t comm;
      if (coralCommInitRank(&comm, nranks, id, r) != coralSuccess) _exit(92);
      (void)!write(rep[1], "ready\n", 6);
      std::string line = survive(comm, r, nranks, dead, lists[r]) + "\n";
      (void)!write(rep[1], line.data(), line.size());
      _exit(0);
    }
    close(rep[1]);
    pids.push_back(pid);
    reports.push_back(rep[0]);
  }
  for (int r = 0; r < nranks; ++r) {
    close(id_r[r]);
    close(id_w[r]);
  }
  for (int r = 0; r < nranks; ++r) REQUIRE(read_line(reports[r]) == "ready");
  usleep(200 * 1000);  // mid all-reduce
  for (int d : dead) kill(pids[d], SIGKILL);
  Run out;
  for (int r = 0; r < nranks; ++r) {
    bool is_dead = std::find(dead.begin(), dead.end(), r) != dead.end();
    out.reports.push_back(is_dead ? "" : read_line(reports[r]));
    close(reports[r]);
  }
  for (pid_t p : pids) waitpid(p, nullptr, 0);
  return out;
}

void expect_shrunk(int nranks, const std::vector<int>& dead, const char* transport) {
  std::vector<std::vector<int>> lists(nranks, dead);
  Run r = run(nranks, dead, lists, transport);
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
