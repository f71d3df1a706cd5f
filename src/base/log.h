// Subsystem-masked logging. Lines look like "host:pid:rank [SUBSYS] message" on stderr.
#pragma once
#include <fmt/format.h>

#include <string>

namespace coral::log {

enum class Level { None = 0, Warn = 1, Info = 2, Trace = 3 };
enum Subsys : unsigned { Init = 1, Net = 2, Shm = 4, Coll = 8, Tune = 16, Boot = 32, All = ~0u };

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

}  // namespace coral::log
