// The verifier's data model and the collectives' contracts (verify.cc runs the schedules): what
// an element carries, where a rank's buffers sit when they alias, how large a schedule must say
// they are, and what every rank's receive buffer must hold at the end. Internal to verify.cc and
// verify_post.cc.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "collectives/schedule.h"

namespace coral::collectives::verify_detail {

// Multiset of contributions: the sum of per-input keys plus their number. Copying, forwarding and
// reducing act on it exactly as on data; a lost, duplicated or misplaced input changes it.
struct Elem {
  uint64_t key = 0;
  uint32_t n = 0;
  uint8_t scaled = 0;
  bool garbage = true;
  bool operator==(const Elem&) const = default;
};

// Rank `rank`'s input element `index` (of its send buffer).
uint64_t input_key(int rank, size_t index);
inline Elem input(int rank, size_t index) { return Elem{input_key(rank, index), 1, 0, false}; }

// Where a rank's send and receive buffers start in its one array, and how long that is. In place
// they alias as the user's do (NCCL's layouts; the root's block for gather and scatter).
struct Placement {
  size_t send_at = 0, recv_at = 0, size = 0;
};
Placement place(const CollArgs& a, size_t send_elems, size_t recv_elems);

// "" if the schedule declares the buffer sizes a's collective needs (checked for the collectives
// whose sizes follow from their counts alone), else what is wrong.
std::string check_elems(const CollArgs& a, const Schedule& s);

// The postcondition over every rank's receive buffer; args[r] are rank r's arguments.
std::string check_post(const std::vector<CollArgs>& args, const std::vector<std::span<const Elem>>& recv);

}  // namespace coral::collectives::verify_detail
