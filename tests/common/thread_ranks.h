// Ranks as threads of one process through the public C API (each thread its own communicator,
// met through one unique id); include catch.hpp first.
#pragma once
#include <coral/coral.h>
#include <fmt/format.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

// Polls a communicator created in the background until it is up; its creation's result.
inline coralResult_t wait_up(coralComm_t c) {
  coralResult_t st = coralInProgress;
  while (st == coralInProgress) coralCommGetAsyncError(c, &st);
  return st;
}

// Runs body(rank, comm) on p threads; returns the first error any thread reported. With
// blocking = false the communicators are made with coralConfig_t::blocking = 0 (so are their
// splits and shrinks).
inline std::string on_ranks(int p, const std::function<std::string(int, coralComm_t)>& body, bool blocking = true) {
  coralUniqueId id;
  if (coralGetUniqueId(&id) != coralSuccess) return "coralGetUniqueId failed";
  std::vector<std::string> errors(p);
  std::vector<std::thread> threads;
  for (int r = 0; r < p; ++r)
    threads.emplace_back([&, r] {
      coralComm_t comm = nullptr;
      coralConfig_t cfg = CORAL_CONFIG_INITIALIZER;
      cfg.blocking = blocking ? 1 : 0;
      const coralResult_t rc = coralCommInitRankConfig(&comm, p, id, r, &cfg);
      if ((blocking ? rc : rc == coralInProgress ? wait_up(comm) : rc) != coralSuccess) {
        errors[r] = fmt::format("rank {}: init: {}", r, coralGetLastError(comm));
        if (comm) coralCommDestroy(comm);
        return;
      }
      errors[r] = body(r, comm);
      coralCommDestroy(comm);
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (!e.empty()) return e;
  return "";
}

// In a body: returns what failed (with `rank` and `comm` in scope) unless x is coralSuccess.
#define CALL(x)                                                                                              \
  do {                                                                                                       \
    if (coralResult_t rc_ = (x); rc_ != coralSuccess)                                                        \
      return fmt::format("rank {}: {} gave {}: {}", rank, #x, static_cast<int>(rc_),                         \
                         coralGetLastError(comm)[0] ? coralGetLastError(comm) : coralGetLastError(nullptr)); \
  } while (0)
