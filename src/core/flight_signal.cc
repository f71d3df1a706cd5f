// SIGUSR1: every live recorder of the process dumps itself. The handler only writes a byte to a
// pipe (that is all a handler may safely do); a thread started with the first recorder reads it
// and dumps, so a rank stuck anywhere, even outside Coral, still answers.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <mutex>
#include <thread>
#include <vector>

#include "core/flight.h"

namespace coral {

namespace {

std::mutex g_mu;
std::vector<FlightRecorder*> g_recorders;  // under g_mu
int g_pipe[2] = {-1, -1};

void on_usr1(int) {
  const char b = 1;
  const int saved = errno;
  if (::write(g_pipe[1], &b, 1) < 0) {}
  errno = saved;
}

void watch() {
  char buf[64];
  while (true) {
    const ssize_t k = ::read(g_pipe[0], buf, sizeof buf);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return;
    std::lock_guard<std::mutex> lock(g_mu);
    for (const FlightRecorder* r : g_recorders) r->dump("SIGUSR1", true);
  }
}

// Once per process, and only where nobody else handles SIGUSR1 (its default kills the process).
void install_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction old {};
    if (sigaction(SIGUSR1, nullptr, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) return;
    if (pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return;
    // The reader blocks; only the handler's end must never block.
    fcntl(g_pipe[0], F_SETFL, fcntl(g_pipe[0], F_GETFL) & ~O_NONBLOCK);
    std::thread(watch).detach();
    struct sigaction sa {};
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, nullptr);
  });
}

}  // namespace

void register_recorder(FlightRecorder* r) {
  install_once();
  std::lock_guard<std::mutex> lock(g_mu);
  g_recorders.push_back(r);
}

void unregister_recorder(FlightRecorder* r) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_recorders.erase(std::remove(g_recorders.begin(), g_recorders.end(), r), g_recorders.end());
}

}  // namespace coral
