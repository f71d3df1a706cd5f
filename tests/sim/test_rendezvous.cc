// Rendezvous at an address every process knows: ids from coralGetUniqueIdAt (NCCL_COMM_ID's
// scheme) and coralCommInitEnv under MASTER_ADDR/MASTER_PORT. In both, rank 0's process serves
// the store on the agreed port, and a process may create communicators there more than once.
#include <catch2/catch.hpp>

#include <coral/coral.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

// A port nobody listens on now.
int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  REQUIRE(fd >= 0);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  close(fd);
  return ntohs(a.sin_port);
}

// Runs body(rank) in p forked processes; each one's report ("" for success).
std::vector<std::string> forked(int p, const std::function<std::string(int)>& body) {
  std::vector<pid_t> pids;
  std::vector<int> fds;
  for (int r = 0; r < p; ++r) {
    int pipefd[2];
    REQUIRE(pipe(pipefd) == 0);
    pid_t pid = fork();
    if (pid == 0) {
      alarm(60);  // a hang ends as a died rank, not as the test's timeout
      close(pipefd[0]);
      const std::string line = "report " + body(r) + "\n";
      (void)!write(pipefd[1], line.data(), line.size());
      _exit(0);
    }
    close(pipefd[1]);
    pids.push_back(pid);
    fds.push_back(pipefd[0]);
  }
  std::vector<std::string> out;
  for (int r = 0; r < p; ++r) {
    std::string s;
    char c;
    while (read(fds[r], &c, 1) == 1 && c != '\n') s += c;
    s = s.rfind("report ", 0) == 0 ? s.substr(7) : "died";
    close(fds[r]);
    int st = 0;
    waitpid(pids[r], &st, 0);
    if (!WIFEXITED(st)) s = "died of signal " + std::to_string(WTERMSIG(st));
    out.push_back(s);
  }
  return out;
}

// An all-reduce of (rank, 1) on comm, checked; "" when right.
std::string sum_check(coralComm_t comm, int rank, int p, int round) {
  double x[2] = {double(rank), double(round)}, y[2] = {0, 0};
  if (coralAllReduce(x, y, 2, coralFloat64, coralSum, comm, nullptr) != coralSuccess)
    return "round " + std::to_string(round) + ": " + coralGetLastError(comm);
  if (y[0] != p * (p - 1) / 2 || y[1] != p * round)
    return "round " + std::to_string(round) + " summed " + std::to_string(y[0]) + ", " + std::to_string(y[1]);
  return "";
}

// Creates a communicator with `init` `rounds` times, each checked by an all-reduce; "" when right.
std::string rounds_of(int rounds, int rank, int p, const std::function<coralResult_t(coralComm_t*)>& init) {
  for (int round = 1; round <= rounds; ++round) {
    coralComm_t comm;
    if (init(&comm) != coralSuccess) return "init " + std::to_string(round) + ": " + coralGetLastError(nullptr);
    const std::string r = sum_check(comm, rank, p, round);
    coralCommDestroy(comm);
    if (!r.empty()) return r;
  }
  return "";
}

}  // namespace

TEST_CASE("coralGetUniqueIdAt checks the address and gives every process the same id") {
  coralUniqueId a, b, c;
  CHECK(coralGetUniqueIdAt(nullptr, &a) == coralInvalidArgument);
  CHECK(coralGetUniqueIdAt("127.0.0.1:5000", nullptr) == coralInvalidArgument);
  for (const char* bad : {"", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536", "host:port", ":80", "[::1:80", "a b:80"}) {
    INFO(bad);
    CHECK(coralGetUniqueIdAt(bad, &a) == coralInvalidArgument);
    CHECK(std::string(coralGetLastError(nullptr)).find("store address") != std::string::npos);
  }
  REQUIRE(coralGetUniqueIdAt("10.1.2.3:29500", &a) == coralSuccess);
  REQUIRE(coralGetUniqueIdAt("10.1.2.3:29500", &b) == coralSuccess);
  REQUIRE(coralGetUniqueIdAt("10.1.2.3:29501", &c) == coralSuccess);
  CHECK(std::memcmp(&a, &b, sizeof a) == 0);
  CHECK(std::memcmp(&a, &c, sizeof a) != 0);
  REQUIRE(coralGetUniqueIdAt("[::1]:29500", &c) == coralSuccess);
}

TEST_CASE("ranks meet at an address-made id, twice, with no id handed around") {
  const std::string addr = "127.0.0.1:" + std::to_string(free_port());
  const int p = 3;
  auto reports = forked(p, [&](int rank) {
    coralUniqueId id;
    if (coralGetUniqueIdAt(addr.c_str(), &id) != coralSuccess) return std::string("id: ") + coralGetLastError(nullptr);
    return rounds_of(2, rank, p, [&](coralComm_t* c) { return coralCommInitRank(c, p, id, rank); });
  });
  for (int r = 0; r < p; ++r) CHECK(reports[r] == "");
}

TEST_CASE("ranks meet at an IPv6 address, and their store is there too") {
  int probe = socket(AF_INET6, SOCK_STREAM, 0);
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  socklen_t len = sizeof a;
  if (probe < 0 || bind(probe, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    WARN("no IPv6 loopback here");
    if (probe >= 0) close(probe);
    return;
  }
  REQUIRE(getsockname(probe, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  close(probe);
  const std::string addr = "[::1]:" + std::to_string(ntohs(a.sin6_port));
  auto reports = forked(2, [&](int rank) {
    coralUniqueId id;
    if (coralGetUniqueIdAt(addr.c_str(), &id) != coralSuccess) return std::string("id: ") + coralGetLastError(nullptr);
    return rounds_of(1, rank, 2, [&](coralComm_t* c) { return coralCommInitRank(c, 2, id, rank); });
  });
  for (int r = 0; r < 2; ++r) CHECK(reports[r] == "");
}

TEST_CASE("an address-made id whose port another process holds fails at rank 0, naming it") {
  int busy = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  socklen_t len = sizeof a;
  REQUIRE(bind(busy, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(listen(busy, 1) == 0);
  REQUIRE(getsockname(busy, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  const std::string addr = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  auto reports = forked(1, [&](int) {
    coralUniqueId id;
    coralComm_t comm;
    if (coralGetUniqueIdAt(addr.c_str(), &id) != coralSuccess) return std::string("id: ") + coralGetLastError(nullptr);
    if (coralCommInitRank(&comm, 1, id, 0) == coralSuccess) return std::string("init succeeded");
    return std::string(coralGetLastError(nullptr));
  });
  close(busy);
  CHECK_THAT(reports[0], Catch::Contains("rank 0 cannot serve the rendezvous at " + addr));
  CHECK_THAT(reports[0], Catch::Contains("in use"));
}

// Communicators one after another from one address, as NCCL_COMM_ID users make them: a process
// may sit one out, another process may be rank 0 of the next, and ranks may spell the address
// differently. Each round: ranks[p] is process p's rank, -1 for none. (As in NCCL, a process
// that sat one out must not be rank 0 of the next: it would open the next meeting while the
// other processes still create the one it sat out.)
TEST_CASE("address-made ids serve communicators of changing members and rank 0s") {
  const int port = free_port();
  const std::vector<std::vector<int>> rounds = {{0, 1, 2}, {0, 1, -1}, {1, 0, 2}, {2, 1, 0}, {-1, 0, 1}, {1, 0, 2}};
  auto reports = forked(3, [&](int proc) {
    // The same place spelt two ways.
    const std::string addr = (proc == 1 ? "localhost:" : "127.0.0.1:") + std::to_string(port);
    coralUniqueId id;
    if (coralGetUniqueIdAt(addr.c_str(), &id) != coralSuccess) return std::string("id: ") + coralGetLastError(nullptr);
    for (size_t round = 0; round < rounds.size(); ++round) {
      const int rank = rounds[round][static_cast<size_t>(proc)];
      if (rank < 0) continue;
      int n = 0;
      for (int r : rounds[round]) n += r >= 0;
      coralComm_t comm;
      if (coralCommInitRank(&comm, n, id, rank) != coralSuccess)
        return "round " + std::to_string(round) + ": " + coralGetLastError(nullptr);
      const std::string r = sum_check(comm, rank, n, static_cast<int>(round));
      coralCommDestroy(comm);
      if (!r.empty()) return r;
    }
    return std::string();
  });
  for (int r = 0; r < 3; ++r) CHECK(reports[r] == "");
}

TEST_CASE("a rank 0 that exits right after creating the communicator leaves the others a whole one") {
  for (int round = 0; round < 10; ++round) {
    int ids[2];
    REQUIRE(pipe(ids) == 0);
    auto reports = forked(3, [&](int rank) {
      coralUniqueId id;
      if (rank == 0) {
        if (coralGetUniqueId(&id) != coralSuccess) return std::string("id");
        for (int q = 1; q < 3; ++q) (void)!write(ids[1], &id, sizeof id);
      } else if (read(ids[0], &id, sizeof id) != sizeof id) {
        return std::string("no id");
      }
      coralComm_t comm;
      if (coralCommInitRank(&comm, 3, id, rank) != coralSuccess) return std::string(coralGetLastError(nullptr));
      coralCommDestroy(comm);
      return std::string();  // rank 0's process, and its store, end here
    });
    close(ids[0]);
    close(ids[1]);
    for (int r = 0; r < 3; ++r) CHECK(reports[r] == "");
  }
}

TEST_CASE("coralCommInitEnv under MASTER_ADDR/MASTER_PORT creates a communicator more than once") {
  const std::string port = std::to_string(free_port());
  const int p = 2;
  auto reports = forked(p, [&](int rank) {
    for (const char* v : {"CORAL_RANK", "CORAL_SIZE", "CORAL_ROOT", "CORAL_SECRET", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                          "SLURM_PROCID", "TORCHELASTIC_USE_AGENT_STORE"})
      unsetenv(v);
    setenv("RANK", std::to_string(rank).c_str(), 1);
    setenv("WORLD_SIZE", std::to_string(p).c_str(), 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("MASTER_PORT", port.c_str(), 1);
    return rounds_of(3, rank, p, [](coralComm_t* c) { return coralCommInitEnv(c); });
  });
  for (int r = 0; r < p; ++r) CHECK(reports[r] == "");
}
