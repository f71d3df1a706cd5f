#include "bootstrap/launcher_env.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "bootstrap/tcp_store.h"

namespace coral::bootstrap {

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

int env_int(const char* name) {
  const char* v = env(name);
  if (!v) return -1;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end || x < 0 || x > 1 << 24)
    fail(coralInvalidArgument, std::string(name) + "='" + v + "' is not a valid rank or size");
  return static_cast<int>(x);
}

struct Source {
  const char* launcher;
  const char* rank;
  const char* size;
  const char* local_rank;
};

// Weak fallback when no secret was handed out: every rank derives the same value from the job's
// identity. Documented: set CORAL_SECRET for real protection across hosts.
wire::Secret env_secret(const LaunchEnv& e) {
  std::string seed = e.root + "|" + e.launcher;
  for (const char* v : {"TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "PMIX_NAMESPACE", "OMPI_MCA_orte_ess_jobid"})
    if (env(v)) seed += std::string("|") + env(v);
  return wire::derived_secret(seed);
}

}  // namespace

LaunchEnv read_launch_env() {
  const Source sources[] = {
      {"coral-run", "CORAL_RANK", "CORAL_SIZE", "CORAL_LOCAL_RANK"},
      {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
      {"mpich", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
      {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
      {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
  };
  LaunchEnv e;
  for (const Source& s : sources) {
    if (!env(s.rank) || !env(s.size)) continue;
    e.launcher = s.launcher;
    e.rank = env_int(s.rank);
    e.size = env_int(s.size);
    e.local_rank = env_int(s.local_rank);
    if (e.size < 1 || e.rank >= e.size)
      fail(coralInvalidArgument, std::string(s.rank) + "=" + std::to_string(e.rank) + " is not below " + s.size + "=" +
                                     std::to_string(e.size));
    break;
  }
  if (e.launcher.empty())
    fail(coralInvalidUsage,
         "no launcher found (set CORAL_RANK/CORAL_SIZE, or run under coral-run, mpirun, "
         "srun or torchrun)");  // the API's caller names the function
  if (env("CORAL_ROOT")) {
    e.root = env("CORAL_ROOT");
    if (env("CORAL_SECRET")) {
      e.secret_hex = env("CORAL_SECRET");
      e.root_hosted_elsewhere = true;
    }
  } else if (env("MASTER_ADDR") && env("MASTER_PORT")) {
    int port = env_int("MASTER_PORT");
    // torchrun's agent already serves its own store on MASTER_PORT.
    if (env("TORCHELASTIC_USE_AGENT_STORE") && std::string(env("TORCHELASTIC_USE_AGENT_STORE")) == "True") port++;
    std::string addr = env("MASTER_ADDR");
    e.root = (addr.find(':') != std::string::npos ? "[" + addr + "]" : addr) + ":" + std::to_string(port);
    if (env("CORAL_SECRET")) e.secret_hex = env("CORAL_SECRET");
  }
  std::string job;
  for (const char* v : {"PMIX_NAMESPACE", "OMPI_MCA_orte_ess_jobid", "SLURM_JOB_ID", "SLURM_STEP_ID"})
    if (env(v)) job += std::string(env(v)) + ".";
  // Ranks on one host share their launcher's per-host process (orted, hydra proxy, slurmstepd).
  e.job_tag = e.launcher + "-" + job + std::to_string(getppid());
  return e;
}

static Rendezvous file_rendezvous(const LaunchEnv& e, double timeout_s) {
  const std::string path = "/dev/shm/coral-rdv-" + std::to_string(getuid()) + "-" + e.job_tag;
  const auto timeout = std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000));
  const auto deadline = net::Clock::now() + timeout;
  if (e.rank == 0) {
    wire::Secret secret = wire::random_secret();
    int port = start_detached_store_server(net::resolve("127.0.0.1", 0), secret, timeout);
    std::string tmp = path + ".tmp" + std::to_string(getpid());
    int fd = open(tmp.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) fail_errno("create " + tmp, errno);
    std::string body = "127.0.0.1:" + std::to_string(port) + " " + wire::secret_to_hex(secret) + "\n";
    bool ok = write(fd, body.data(), body.size()) == static_cast<ssize_t>(body.size());
    close(fd);
    if (!ok || rename(tmp.c_str(), path.c_str()) != 0) fail_errno("publish " + path, errno);
    auto store = std::make_shared<TcpStore>(net::resolve("127.0.0.1", port), secret, timeout);
    return {store, wire::job_key_of(secret), path};
  }
  // Other ranks: wait for the file, then connect; a stale file (old job) fails to connect or
  // authenticate, so keep retrying until the deadline.
  std::string last;
  while (net::Clock::now() < deadline) {
    std::ifstream in(path);
    std::string addr, hex;
    if (in >> addr >> hex) {
      try {
        wire::Secret secret = wire::secret_from_hex(hex);
        auto store = std::make_shared<TcpStore>(net::resolve(addr), secret, std::chrono::milliseconds(2000));
        return {store, wire::job_key_of(secret), ""};
      } catch (const Error& err) {
        last = err.what();
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  fail(coralTimeout, "rank " + std::to_string(e.rank) + ": no rendezvous from rank 0 at " + path +
                         " within CORAL_TIMEOUT" + (last.empty() ? "" : " (" + last + ")"));
}

Rendezvous rendezvous_from_env(const LaunchEnv& e, double timeout_s) {
  if (e.root.empty()) return file_rendezvous(e, timeout_s);
  const auto timeout = std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000));
  wire::Secret secret = e.secret_hex.empty() ? env_secret(e) : wire::secret_from_hex(e.secret_hex);
  if (e.secret_hex.empty()) log::warn(log::Boot, "no CORAL_SECRET: using a secret derived from the job's environment");
  net::SockAddr addr = net::resolve(e.root);
  if (e.rank == 0 && !e.root_hosted_elsewhere)
    serve_store_at(net::any_address(addr.ss.ss_family == AF_INET6, addr.port()), secret);
  return {std::make_shared<TcpStore>(addr, secret, timeout), wire::job_key_of(secret), ""};
}

}  // namespace coral::bootstrap
