// Subsystem-masked logging. Lines look like "host:pid:rank [SUBSYS] message" on stderr.
#pragma once
#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace coral::log {

enum class Level { None = 0, Warn = 1, Info = 2, Trace = 3 };
enum Subsys : unsigned { Init = 1, Net = 2, Shm = 4, Coll = 8, Tune = 16, Boot = 32, Topo = 64, All = ~0u };

bool enabled(Level level, Subsys subsys);
void write(Level level, Subsys subsys, const std::string& message);
// The rank shown in log lines of the calling thread (ranks can be threads in tests).
void set_thread_rank(int rank);
int thread_rank();
// "INIT,NET,...,ALL": the subsystem names CORAL_DEBUG_SUBSYS takes.
std::string subsystem_names();
// Re-reads CORAL_DEBUG / CORAL_DEBUG_SUBSYS (tests change them).
void reload();

template <class... A>
void warn(Subsys s, fmt::format_string<A...> f, A&&... a) {
  if (enabled(Level::Warn, s)) write(Level::Warn, s, fmt::format(f, std::forward<A>(a)...));
}
template <class... A>
void info(Subsys s, fmt::format_string<A...> f, A&&... a) {
  if (enabled(Level::Info, s)) write(Level::Info, s, fmt::format(f, std::forward<A>(a)...));
}
template <class... A>
void trace(Subsys s, fmt::format_string<A...> f, A&&... a) {
  if (enabled(Level::Trace, s)) write(Level::Trace, s, fmt::format(f, std::forward<A>(a)...));
}

// For events a stranger can cause at any rate (connections refused by the store): the first
// `burst` are logged one by one, then at most one line per `every`, which says how many were
// held back. admit() returns 0 to stay silent, else 1 + the number held back since the last line.
class Throttle {
 public:
  explicit Throttle(int burst = 5, std::chrono::seconds every = std::chrono::seconds(10))
      : burst_(burst), every_(every) {}
  uint64_t admit() {
    std::lock_guard<std::mutex> lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (burst_ > 0) {
      --burst_;
      last_ = now;
      return 1;
    }
    if (now - last_ < every_) {
      ++held_;
      return 0;
    }
    last_ = now;
    const uint64_t n = held_ + 1;
    held_ = 0;
    return n;
  }

 private:
  std::mutex mu_;
  int burst_;
  std::chrono::seconds every_;
  std::chrono::steady_clock::time_point last_{};
  uint64_t held_ = 0;
};

// " (and 41 more like it since the last such line)" for a Throttle's count, "" for 1.
inline std::string held_back(uint64_t n) {
  return n > 1 ? fmt::format(" (and {} more like it since the last such line)", n - 1) : std::string();
}

}  // namespace coral::log
