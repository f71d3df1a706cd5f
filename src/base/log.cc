#include "base/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>

#include "base/config.h"

namespace coral::log {
namespace {

std::atomic<int> g_level{-1};
std::atomic<unsigned> g_mask{All};
thread_local int t_rank = -1;

Level parse_level(const std::string& s) {
  if (s == "NONE") return Level::None;
  if (s == "INFO") return Level::Info;
  if (s == "TRACE") return Level::Trace;
  return Level::Warn;
}

unsigned parse_mask(const std::string& s) {
  unsigned mask = 0;
  for (const std::string& item : config::split(s, ',')) {
    if (item == "INIT")
      mask |= Init;
    else if (item == "NET")
      mask |= Net;
    else if (item == "SHM")
      mask |= Shm;
    else if (item == "COLL")
      mask |= Coll;
    else if (item == "TUNE")
      mask |= Tune;
    else if (item == "BOOT")
      mask |= Boot;
    else if (item == "ALL")
      mask = All;
  }
  return mask;
}

const char* subsys_name(Subsys s) {
  switch (s) {
    case Init:
      return "INIT";
    case Net:
      return "NET";
    case Shm:
      return "SHM";
    case Coll:
      return "COLL";
    case Tune:
      return "TUNE";
    case Boot:
      return "BOOT";
    default:
      return "ALL";
  }
}

}  // namespace

void reload() {
  // The registry rejects unknown levels and subsystems (communicator creation fails naming them);
  // logging itself must not throw, so it says so once and keeps the defaults.
  try {
    g_mask = parse_mask(config::get_string("CORAL_DEBUG_SUBSYS"));
    g_level = static_cast<int>(parse_level(config::get_string("CORAL_DEBUG")));
  } catch (const std::exception& e) {
    g_mask = All;
    g_level = static_cast<int>(Level::Warn);
    std::fprintf(stderr, "coral: %s; logging at WARN for every subsystem\n", e.what());
  }
}

bool enabled(Level level, Subsys subsys) {
  if (g_level.load(std::memory_order_relaxed) < 0) reload();
  return static_cast<int>(level) <= g_level.load(std::memory_order_relaxed) &&
         (g_mask.load(std::memory_order_relaxed) & subsys);
}

void write(Level level, Subsys subsys, const std::string& message) {
  static std::mutex mu;
  char host[64] = "?";
  gethostname(host, sizeof host - 1);
  const char* lv = level == Level::Warn ? "WARN" : level == Level::Info ? "INFO" : "TRACE";
  std::string line =
      fmt::format("{}:{}:{} coral {} [{}] {}\n", host, getpid(), t_rank, lv, subsys_name(subsys), message);
  std::lock_guard<std::mutex> lock(mu);
  std::fputs(line.c_str(), stderr);
}

void set_thread_rank(int rank) { t_rank = rank; }
int thread_rank() { return t_rank; }

}  // namespace coral::log
