// Waits on the rendezvous store that a peer which never comes would stretch to the whole
// timeout end at once when the application gives up: coralCommAbort of a split or shrink child
// still being made in the background, and coralCommRevoke while a first device call connects
// its links. The timeout is a minute away: a call that ends in seconds ended because of them.
// And coralCommSetTimeout, which shortens (or lengthens) the waits of later operations, and the
// timeout of a wait for Coral's own GPU stream.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "common/thread_ranks.h"
#include "gpu/runtime.h"

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Timeout {
  Timeout() { setenv("CORAL_TIMEOUT", "60", 1); }
  ~Timeout() { unsetenv("CORAL_TIMEOUT"); }
};

// Aborts child, still coming up, 200 ms from now; returns how long the abort took (s).
double abort_later(coralComm_t child) {
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  coralResult_t st = coralSuccess;
  coralCommGetAsyncError(child, &st);
  const auto t0 = Clock::now();
  coralCommAbort(child);
  return st == coralInProgress ? since(t0) : -1;
}

}  // namespace

namespace {

// A forked rank of the split test; returns its exit status. Rank 0 makes the unique id (and
// serves its store) and hands it on through the pipes: the test process starts no thread before
// it forks (ThreadSanitizer refuses threads in a child forked from a threaded process).
int split_rank(int rank, const int (&to)[3][2]) {
  coralUniqueId id;
  if (rank == 0) {
    if (coralGetUniqueId(&id) != coralSuccess) return 1;
    for (int q = 1; q < 3; ++q) (void)!write(to[q][1], &id, sizeof id);
  } else if (read(to[rank][0], &id, sizeof id) != sizeof id) {
    return 1;
  }
  coralConfig_t cfg = CORAL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  coralComm_t comm = nullptr, child = nullptr;
  if (coralCommInitRankConfig(&comm, 3, id, rank, &cfg) != coralInProgress || wait_up(comm) != coralSuccess) {
    std::fprintf(stderr, "rank %d: init failed: %s\n", rank, coralGetLastError(comm));
    return 1;
  }
  const coralResult_t rc = coralCommSplit(comm, 0, rank, &child);
  if (rc != coralInProgress) {
    std::fprintf(stderr, "rank %d: split gave %d, not coralInProgress\n", rank, static_cast<int>(rc));
    return 1;
  }
  if (rank == 2) kill(getpid(), SIGKILL);  // dies with its part of the child's rendezvous undone
  const double took = abort_later(child);
  coralCommAbort(comm);
  if (took > 10) {
    std::fprintf(stderr, "rank %d: coralCommAbort waited %.1f s for the split\n", rank, took);
    return 1;
  }
  return 0;
}

}  // namespace

// First: it forks, and no thread of this process may exist yet (see split_rank).
TEST_CASE("coralCommAbort gives up a background split whose member died") {
  Timeout t;
  int to[3][2];
  for (auto& p : to) REQUIRE(pipe(p) == 0);
  std::vector<pid_t> pids;
  for (int r = 0; r < 3; ++r) {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) _exit(split_rank(r, to));
    pids.push_back(pid);
  }
  for (auto& p : to) close(p[0]), close(p[1]);
  for (int r = 0; r < 3; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    INFO("rank " << r << " (its message, if any, is on stderr)");
    if (r == 2)
      CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
    else
      CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  }
}

TEST_CASE("coralCommAbort gives up a background shrink that a survivor never joins") {
  Timeout t;
  const std::string err = on_ranks(
      3,
      [](int rank, coralComm_t comm) -> std::string {
        // Ranks 0 and 1 shrink, excluding no one: the rendezvous waits for rank 2, which does not come.
        if (rank == 2) return "";
        coralComm_t child = nullptr;
        const coralResult_t rc = coralCommShrink(comm, nullptr, 0, &child);
        if (rc != coralInProgress) return fmt::format("rank {}: shrink gave {}, not coralInProgress", rank, int(rc));
        const double took = abort_later(child);
        if (took < 0) return fmt::format("rank {}: the shrink came up without rank 2", rank);
        if (took > 10) return fmt::format("rank {}: coralCommAbort waited {:.1f} s for the shrink", rank, took);
        return "";
      },
      /*blocking=*/false);
  CHECK(err == "");
}

TEST_CASE("coralCommRevoke ends a first device call that waits for a peer's links") {
  INFO("needs a GPU, or the stand-in one (CORAL_GPU_EMULATE=1, as meson test sets)");
  REQUIRE(coral::gpu::usable());
  Timeout t;
  std::atomic<bool> done{false};
  const std::string err = on_ranks(2, [&](int rank, coralComm_t comm) -> std::string {
    if (rank == 1) {  // makes no device call: rank 0's links never meet it
      while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return "";
    }
    const size_t n = 1024;
    void* buf = coral::gpu::alloc_device(n * sizeof(float));
    std::thread watchdog([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      coralCommRevoke(comm);
    });
    const auto t0 = Clock::now();
    const coralResult_t rc = coralAllReduce(buf, buf, n, coralFloat32, coralSum, comm, nullptr);
    const double took = since(t0);
    watchdog.join();
    done = true;
    const std::string msg = coralGetLastError(comm);
    coral::gpu::free_device(buf);
    if (rc == coralSuccess) return "rank 0: the device all-reduce succeeded without rank 1";
    if (took > 10) return fmt::format("rank 0: the device all-reduce ended {:.1f} s after the start: {}", took, msg);
    if (msg.find("given up") == std::string::npos && msg.find("revoked") == std::string::npos)
      return "rank 0: the error does not say the wait was given up: " + msg;
    return "";
  });
  CHECK(err == "");
}

TEST_CASE("coralCommSetTimeout bounds later waits, and splits inherit it") {
  Timeout t;
  const std::string err = on_ranks(2, [](int rank, coralComm_t comm) -> std::string {
    if (coralCommSetTimeout(comm, 0) != coralInvalidArgument) return "a timeout of 0 was accepted";
    if (coralCommSetTimeout(comm, -3) != coralInvalidArgument) return "a negative timeout was accepted";
    if (coralCommSetTimeout(nullptr, 5) != coralInvalidArgument) return "a NULL communicator was accepted";
    CALL(coralCommSetTimeout(comm, 1));
    coralComm_t child = nullptr;
    CALL(coralCommSplit(comm, 0, rank, &child));
    // Both receive and nobody sends: each waits for its timeout, one second and not sixty (or
    // hears of the peer's timeout first).
    float buf[4];
    for (coralComm_t c : {child, comm}) {
      const auto t0 = Clock::now();
      const coralResult_t rc = coralRecv(buf, 4, coralFloat32, 1 - rank, c, nullptr);
      const double took = since(t0);
      const std::string which = c == comm ? "the communicator" : "its split";
      if (rc != coralTimeout && rc != coralRemoteError)
        return fmt::format("rank {}: a receive nobody sends on {} gave {}, not a timeout", rank, which, int(rc));
      if (took > 20) return fmt::format("rank {}: the receive on {} waited {:.1f} s, not about 1 s", rank, which, took);
    }
    coralCommDestroy(child);
    return "";
  });
  CHECK(err == "");
}

TEST_CASE("a wait for a GPU stream that never drains ends at its timeout or when given up") {
  // Coral's own stream stuck behind a wait that nothing raises: what a caller's stream held on
  // Coral's flag does to it where the two share a hardware queue. The sync must not hang.
  REQUIRE(coral::gpu::usable());
  coral::gpu::Stream s;
  coral::gpu::HostFlag flag;
  flag.note_wait(1);
  flag.enqueue_wait(s.get(), 1);
  coral::gpu::Event e;
  e.record(s.get());
  auto expect_end = [](const std::function<void()>& sync, coralResult_t code, const char* says, const char* what) {
    const auto t0 = Clock::now();
    try {
      sync();
      FAIL(what << " returned while its stream was stuck");
    } catch (const coral::Error& err) {
      CHECK(err.code() == code);
      CHECK(std::string(err.what()).find(says) != std::string::npos);
    }
    CHECK(since(t0) < 5);
  };
  const char* cure = "CORAL_GPU_STREAM_WAIT=host";
  expect_end([&] { s.sync({0.3}); }, coralTimeout, cure, "the stream's sync");
  expect_end([&] { e.sync({0.3}); }, coralTimeout, cure, "the event's sync");
  // Given up (a revoke, as the communicator's check throws then) long before the timeout.
  std::atomic<bool> revoked{false};
  const std::function<void()> check = [&] {
    if (revoked) throw coral::Error(coralRemoteError, "revoked by the test");
  };
  std::thread revoker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    revoked = true;
  });
  expect_end([&] { s.sync({60, &check}); }, coralRemoteError, "revoked", "the given-up stream sync");
  revoker.join();
  flag.set(1);
  s.sync({5});
  e.sync({5});
}
