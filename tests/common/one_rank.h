// A one-rank communicator for Catch2 tests (include catch.hpp first).
#pragma once
#include <coral/coral.h>

inline coralComm_t one_rank_comm() {
  coralUniqueId id;
  REQUIRE(coralGetUniqueId(&id) == coralSuccess);
  coralComm_t comm = nullptr;
  REQUIRE(coralCommInitRank(&comm, 1, id, 0) == coralSuccess);
  return comm;
}
