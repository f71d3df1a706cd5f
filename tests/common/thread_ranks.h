// Ranks as threads of one process through the public C API (each thread its own communicator,
// met through one unique id); include catch.hpp first.
#pragma once
#include <coral/coral.h>
#include <fmt/format.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

// Runs body(rank, comm) on p threads; returns the first error any thread reported.
inline std::string on_ranks(int p, const std::function<std::string(int, coralComm_t)>& body) {
  coralUniqueId id;
  if (coralGetUniqueId(&id) != coralSuccess) return "coralGetUniqueId failed";
  std::vector<std::string> errors(p);
  std::vector<std::thread> threads;
  for (int r = 0; r < p; ++r)
    threads.emplace_back([&, r] {
      coralComm_t comm = nullptr;
      if (coralCommInitRank(&comm, p, id, r) != coralSuccess) {
        errors[r] = fmt::format("rank {}: init: {}", r, coralGetLastError(nullptr));
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
