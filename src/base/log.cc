#include "base/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <utility>

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

// Every subsystem's name once (the config registry lists the same words for CORAL_DEBUG_SUBSYS;
// test_config checks they agree).
constexpr std::pair<const char*, Subsys> kSubsystems[] = {{"INIT", Init}, {"NET", Net},   {"SHM", Shm},
                                                          {"COLL", Coll}, {"TUNE", Tune}, {"BOOT", Boot},
                                                          {"TOPO", Topo}, {"ALL", All}};

unsigned parse_mask(const std::string& s) {
  unsigned mask = 0;
  for (const std::string& item : config::split(s, ','))
    for (const auto& [name, bit] : kSubsystems)
      if (item == name) mask |= bit;
  return mask;
}

const char* subsys_name(Subsys s) {
  for (const auto& [name, bit] : kSubsystems)
    if (bit == s) return name;
  return "ALL";
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

std::string subsystem_names() {
  std::string out;
  for (const auto& [name, bit] : kSubsystems) {
    if (!out.empty()) out += ',';
    out += name;
  }
  return out;
}

void set_thread_rank(int rank) { t_rank = rank; }
int thread_rank() { return t_rank; }

}  // namespace coral::log
