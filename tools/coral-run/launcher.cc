#include "tools/coral-run/launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "bootstrap/tcp_store.h"
#include "tools/coral-run/flight_table.h"

namespace coral::run {

namespace {

using Clock = std::chrono::steady_clock;

struct Stream {
  int fd = -1;
  int rank;  // global, as the prefix shows it
  FILE* sink;
  std::string partial;
};

struct Rank {
  pid_t pid = -1;
  bool running = false;
  int status = 0;
};

void emit(Stream& s, const char* data, size_t n, bool prefix, bool flush) {
  s.partial.append(data, n);
  size_t start = 0, nl;
  while ((nl = s.partial.find('\n', start)) != std::string::npos) {
    if (prefix) std::fprintf(s.sink, "[%d] ", s.rank);
    std::fwrite(s.partial.data() + start, 1, nl - start + 1, s.sink);
    start = nl + 1;
  }
  s.partial.erase(0, start);
  if (flush && !s.partial.empty()) {
    if (prefix) std::fprintf(s.sink, "[%d] ", s.rank);
    std::fprintf(s.sink, "%s\n", s.partial.c_str());
    s.partial.clear();
  }
  std::fflush(s.sink);
}

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "stopped";
}

// Whether process pid has a handler for sig (its SigCgt mask in /proc).
bool catches(pid_t pid, int sig) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("SigCgt:", 0) == 0) return (std::stoull(line.substr(7), nullptr, 16) >> (sig - 1)) & 1;
  return false;
}

// Asks the processes of group pgid that catch SIGUSR1 (Coral's, once it is loaded) to dump their
// flight recorders. Those that do not would die of it: a program not using Coral (yet), a shell
// wrapping the rank.
void ask_dump(pid_t pgid) {
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    const size_t paren = stat.rfind(')');  // the command name may hold spaces and parens
    if (paren == std::string::npos) continue;
    char state = 0;
    long ppid = 0, pgrp = 0;
    if (std::sscanf(stat.c_str() + paren + 1, " %c %ld %ld", &state, &ppid, &pgrp) != 3 || pgrp != pgid) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (catches(pid, SIGUSR1)) kill(pid, SIGUSR1);
  }
}

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

pid_t spawn(const Options& opt, int rank, int out[2], int err[2], const sigset_t& old_mask, const std::string& root,
            const std::string& secret, const std::vector<int>& cpus, const std::pair<std::string, int>& torch_master) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  // Child: die with the launcher, restore signals, wire output, set the rank's environment.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  setpgid(0, 0);  // its own group, so a signal reaches whatever the rank started too
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  dup2(out[1], 1);
  dup2(err[1], 2);
  close(out[0]);
  close(err[0]);
  const int global = opt.node_rank * opt.nranks + rank;
  setenv("CORAL_RANK", std::to_string(global).c_str(), 1);
  setenv("CORAL_SIZE", std::to_string(opt.nnodes * opt.nranks).c_str(), 1);
  setenv("CORAL_LOCAL_RANK", std::to_string(rank).c_str(), 1);
  setenv("CORAL_LOCAL_SIZE", std::to_string(opt.nranks).c_str(), 1);
  setenv("CORAL_ROOT", root.c_str(), 1);
  setenv("CORAL_SECRET", secret.c_str(), 1);
  // What torchrun exports, so torch's env:// rendezvous works under coral-run too.
  setenv("RANK", std::to_string(global).c_str(), 1);
  setenv("WORLD_SIZE", std::to_string(opt.nnodes * opt.nranks).c_str(), 1);
  setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
  setenv("LOCAL_WORLD_SIZE", std::to_string(opt.nranks).c_str(), 1);
  setenv("GROUP_RANK", std::to_string(opt.node_rank).c_str(), 1);
  setenv("MASTER_ADDR", torch_master.first.c_str(), 1);
  setenv("MASTER_PORT", std::to_string(torch_master.second).c_str(), 1);
  if (!cpus.empty()) {
    std::string why = bind_rank(cpus, rank);
    if (!why.empty()) std::fprintf(stderr, "coral-run: rank %d runs unbound: %s\n", global, why.c_str());
  }
  std::vector<char*> argv;
  for (const std::string& a : opt.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  std::fprintf(stderr, "coral-run: cannot execute %s: %s\n", argv[0], std::strerror(errno));
  _exit(127);
}

// MASTER_ADDR/MASTER_PORT for torch: one node keeps the user's or takes a free local port; across
// nodes, node 0's host at the port after coral's own store (which holds the root port itself).
std::pair<std::string, int> torch_master(const Options& opt) {
  if (opt.nnodes > 1) {
    net::SockAddr at = net::resolve(opt.root);
    std::string host = opt.root.substr(0, opt.root.rfind(':'));
    if (host.size() > 1 && host.front() == '[') host = host.substr(1, host.size() - 2);
    return {host, at.port() + 1};
  }
  const char* addr = std::getenv("MASTER_ADDR");
  const char* port = std::getenv("MASTER_PORT");
  if (addr && port && *addr && std::atoi(port) > 0) return {addr, std::atoi(port)};
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  int p = 29500;
  if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) == 0)
    p = ntohs(sa.sin_port);
  if (fd >= 0) close(fd);
  return {"127.0.0.1", p};
}

}  // namespace

int launch(const Options& opt) {
  // Block before any thread exists (the store's included), so signals reach only the signalfd.
  sigset_t mask, old_mask;
  sigemptyset(&mask);
  for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1}) sigaddset(&mask, s);
  sigprocmask(SIG_BLOCK, &mask, &old_mask);
  // Ranks dump their flight recorders here on a timeout or SIGUSR1 (the user's path if given),
  // so coral-run can print one table of where every rank is.
  std::string dump_dir;
  if (const char* d = std::getenv("CORAL_DUMP_ON_TIMEOUT"); d && *d) {
    dump_dir = d;
  } else {
    char tmpl[] = "/tmp/coral-run-flight-XXXXXX";
    if (mkdtemp(tmpl)) {
      dump_dir = tmpl;
      setenv("CORAL_DUMP_ON_TIMEOUT", tmpl, 1);
    }
  }
  const bool own_dump_dir = dump_dir.rfind("/tmp/coral-run-flight-", 0) == 0 && !std::getenv("CORAL_RUN_KEEP_DUMPS");
  bootstrap::wire::Secret secret =
      opt.secret.empty() ? bootstrap::wire::random_secret() : bootstrap::wire::secret_from_hex(opt.secret);
  std::unique_ptr<bootstrap::TcpStoreServer> store;
  std::string root = opt.root;
  if (opt.nnodes == 1) {
    store = std::make_unique<bootstrap::TcpStoreServer>(net::resolve("127.0.0.1", 0), secret, false,
                                                        std::chrono::milliseconds(0));
    root = "127.0.0.1:" + std::to_string(store->port());
  } else if (opt.node_rank == 0) {
    // Served on every interface at the root's port: the other nodes reach it at root.
    net::SockAddr at = net::resolve(root);
    store = std::make_unique<bootstrap::TcpStoreServer>(net::any_address(at.ss.ss_family == AF_INET6, at.port()),
                                                        secret, false, std::chrono::milliseconds(0));
  }

  int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);

  const std::pair<std::string, int> master = torch_master(opt);
  std::vector<int> cpus = opt.bind == Bind::None ? std::vector<int>{} : cpu_order();
  if (resolve_bind(opt.bind, opt.nranks, opt.nnodes, cpus.size()) != Bind::Core) cpus.clear();
  std::vector<Rank> ranks(opt.nranks);
  std::vector<Stream> streams;
  const int first_rank = opt.node_rank * opt.nranks;  // output and messages name global ranks
  for (int r = 0; r < opt.nranks; ++r) {
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
      std::perror("coral-run: pipe");
      return 1;
    }
    ranks[r].pid = spawn(opt, r, out, err, old_mask, root, bootstrap::wire::secret_to_hex(secret), cpus, master);
    ranks[r].running = ranks[r].pid > 0;
    if (ranks[r].pid > 0) setpgid(ranks[r].pid, ranks[r].pid);
    close(out[1]);
    close(err[1]);
    streams.push_back({out[0], first_rank + r, stdout, {}});
    streams.push_back({err[0], first_rank + r, stderr, {}});
  }

  const auto started = Clock::now();
  int first_failed = -1;
  std::string why;
  Clock::time_point kill_at{};
  bool stopping = false;
  auto stop_all = [&](int sig) {
    for (Rank& r : ranks) {
      if (!r.running) continue;
      if (sig == SIGUSR1) {
        ask_dump(r.pid);
        continue;
      }
      kill(-r.pid, sig);
      if (sig == SIGTERM) kill(-r.pid, SIGCONT);  // a stopped rank acts on it now, not at SIGKILL
    }
  };
  int running = opt.nranks;
  int received = 0;  // the signal that stopped the job, if one did
  Clock::time_point all_exited{};
  // A table is due (SIGUSR1, a timeout, a rank failing in Coral); with `then_stop`, the job
  // stops once it is printed.
  Clock::time_point table_at{};
  bool then_stop = false, table_printed = false;
  auto print_table = [&] {
    const std::string t = flight_table(dump_dir, first_rank, opt.nranks);
    if (!t.empty())
      std::fprintf(stderr, "coral-run: where each rank is (flight recorders, %s):\n%s", dump_dir.c_str(), t.c_str());
    table_printed = table_printed || !t.empty();
  };
  auto open_streams = [&] {
    return std::any_of(streams.begin(), streams.end(), [](const Stream& s) { return s.fd >= 0; });
  };
  // Once every rank has exited, output still in flight gets a moment; a leftover grandchild
  // holding a pipe open does not keep coral-run alive.
  while (running > 0 || (open_streams() && Clock::now() - all_exited < std::chrono::seconds(2))) {
    std::vector<pollfd> fds{{sfd, POLLIN, 0}};
    for (Stream& s : streams) fds.push_back({s.fd, POLLIN, 0});  // fd -1 is ignored by poll
    poll(fds.data(), fds.size(), 100);
    for (size_t i = 0; i < streams.size(); ++i) {
      Stream& s = streams[i];
      if (s.fd < 0 || !(fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      ssize_t k = read(s.fd, buf, sizeof buf);
      if (k > 0) {
        emit(s, buf, static_cast<size_t>(k), opt.prefix, false);
      } else if (k == 0 || errno != EINTR) {
        emit(s, "", 0, opt.prefix, true);
        close(s.fd);
        s.fd = -1;
      }
    }
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo si;
      while (read(sfd, &si, sizeof si) == sizeof si) {
        if (si.ssi_signo == SIGUSR1) {  // every rank dumps its recorder; the table follows
          stop_all(SIGUSR1);
          table_at = Clock::now() + std::chrono::seconds(1);
        } else if (si.ssi_signo != SIGCHLD) {  // forward user signals to every rank
          stop_all(static_cast<int>(si.ssi_signo));
          if (first_failed < 0 && why.empty()) {
            why = std::string("received ") + strsignal(si.ssi_signo);
            received = static_cast<int>(si.ssi_signo);
          }
          stopping = true;
          kill_at = Clock::now() + std::chrono::seconds(5);
        }
      }
    }
    for (int r = 0; r < opt.nranks; ++r) {
      if (!ranks[r].running) continue;
      int st;
      if (waitpid(ranks[r].pid, &st, WNOHANG) != ranks[r].pid) continue;
      ranks[r].running = false;
      ranks[r].status = st;
      if (--running == 0) all_exited = Clock::now();
      bool bad = !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
      if (bad && opt.keep_going && !stopping) {
        // Elastic programs go on without it: say so, and keep every other rank running.
        std::fprintf(stderr, "coral-run: rank %d (pid %d) %s; the other ranks go on (--keep-going)\n", first_rank + r,
                     static_cast<int>(ranks[r].pid), describe(st).c_str());
        continue;
      }
      if (bad && first_failed < 0 && !stopping) {
        first_failed = r;
        why = "rank " + std::to_string(first_rank + r) + " (pid " + std::to_string(ranks[r].pid) + ") " + describe(st);
        stopping = true;
        if (!flight_table(dump_dir, first_rank, opt.nranks).empty()) {
          // It failed in Coral (it dumped): the others say where they are before they stop.
          stop_all(SIGUSR1);
          table_at = Clock::now() + std::chrono::milliseconds(500);
          then_stop = true;
        } else {
          stop_all(SIGTERM);
        }
        kill_at = Clock::now() + std::chrono::seconds(3);
      }
    }
    if (!stopping && opt.timeout_s > 0 && Clock::now() - started > std::chrono::duration<double>(opt.timeout_s)) {
      char after[64];
      std::snprintf(after, sizeof after, "timeout after %g s", opt.timeout_s);
      why = after;
      stopping = true;
      stop_all(SIGUSR1);
      table_at = Clock::now() + std::chrono::seconds(1);
      then_stop = true;
      kill_at = Clock::now() + std::chrono::seconds(4);
    }
    if (table_at != Clock::time_point{} && Clock::now() > table_at) {
      table_at = {};
      print_table();
      if (then_stop) stop_all(SIGTERM);
    }
    if (stopping && running > 0 && Clock::now() > kill_at) stop_all(SIGKILL);
  }
  if (store) store->stop();
  if (table_at != Clock::time_point{} || (first_failed >= 0 && !table_printed)) print_table();
  if (own_dump_dir) std::filesystem::remove_all(dump_dir);
  if (first_failed >= 0) {
    if (opt.nranks > 1)
      std::fprintf(stderr, "coral-run: %s; stopped the other %d rank(s)\n", why.c_str(), opt.nranks - 1);
    else
      std::fprintf(stderr, "coral-run: %s\n", why.c_str());
    return exit_code(ranks[first_failed].status);
  }
  if (!why.empty()) {
    std::fprintf(stderr, "coral-run: %s; stopped all %d rank(s)\n", why.c_str(), opt.nranks);
    // As a shell reports a job a signal ended: 128 + its number (130 for SIGINT, 143 for SIGTERM).
    // Otherwise it was --timeout.
    return received ? 128 + received : 124;
  }
  int rc = 0, finished = 0;
  for (const Rank& r : ranks) {
    // --keep-going: a rank killed by a signal was lost, not failed; the job stands on the rest.
    if (opt.keep_going && WIFSIGNALED(r.status)) continue;
    finished++;
    rc = rc ? rc : exit_code(r.status);
  }
  if (opt.keep_going && finished < opt.nranks) {
    std::fprintf(stderr, "coral-run: %d of %d rank(s) lost, %d finished%s\n", opt.nranks - finished, opt.nranks,
                 finished, rc ? " (not all cleanly)" : "");
    if (finished == 0) rc = exit_code(ranks[0].status);
  }
  return rc;
}

}  // namespace coral::run
