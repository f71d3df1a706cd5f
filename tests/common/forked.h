// Ranks as forked processes of the test (include catch.hpp first): rank 0 makes the unique id,
// each process runs body on its communicator and reports one line ("" for success). Once every
// rank's communicator is up, on_ready (if any) gets the ranks' pids, e.g. to kill some.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <coral/coral.h>

#include <functional>
#include <string>
#include <vector>

inline std::string forked_read_line(int fd) {
  std::string s;
  char c;
  while (read(fd, &c, 1) == 1 && c != '\n') s += c;
  return s;
}

// Returns each rank's report; a rank that died without one reports "died".
inline std::vector<std::string> run_forked(int p, const std::function<std::string(int, coralComm_t)>& body,
                                           const std::function<void(const std::vector<pid_t>&)>& on_ready = {}) {
  std::vector<int> id_r(p), id_w(p), rep_r(p);
  for (int r = 0; r < p; ++r) {
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    id_r[r] = fds[0];
    id_w[r] = fds[1];
  }
  std::vector<pid_t> pids;
  for (int r = 0; r < p; ++r) {
    int rep[2];
    REQUIRE(pipe(rep) == 0);
    pid_t pid = fork();
    if (pid == 0) {
      close(rep[0]);
      coralUniqueId id;
      if (r == 0) {
        if (coralGetUniqueId(&id) != coralSuccess) _exit(90);
        for (int q = 1; q < p; ++q) (void)!write(id_w[q], &id, sizeof id);
      } else if (read(id_r[r], &id, sizeof id) != sizeof id) {
        _exit(91);
      }
      coralComm_t comm;
      std::string line;
      if (coralCommInitRank(&comm, p, id, r) != coralSuccess) {
        line = std::string("init: ") + coralGetLastError(nullptr);
      } else {
        (void)!write(rep[1], "ready\n", 6);
        line = body(r, comm);
        coralCommDestroy(comm);
      }
      line = "report " + line + "\n";
      (void)!write(rep[1], line.data(), line.size());
      _exit(0);
    }
    close(rep[1]);
    pids.push_back(pid);
    rep_r[r] = rep[0];
  }
  for (int r = 0; r < p; ++r) {
    close(id_r[r]);
    close(id_w[r]);
  }
  std::vector<std::string> first(p), out;
  for (int r = 0; r < p; ++r) first[r] = forked_read_line(rep_r[r]);  // "ready", or a failed init's report
  if (on_ready) on_ready(pids);
  for (int r = 0; r < p; ++r) {
    std::string line = first[r] == "ready" ? forked_read_line(rep_r[r]) : first[r];
    out.push_back(line.rfind("report ", 0) == 0 ? line.substr(7) : "died");
    close(rep_r[r]);
  }
  for (pid_t pid : pids) waitpid(pid, nullptr, 0);
  return out;
}
