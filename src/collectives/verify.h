// Symbolic execution of every rank's schedule: each element carries a fingerprint of the
// (rank, index) inputs that reached it, so the postcondition of the collective is checked
// exactly, and FIFOs of depth kMinInFlight prove the schedules cannot deadlock.
#pragma once
#include <functional>
#include <string>

#include "collectives/registry.h"

namespace coral::collectives {

struct VerifyResult {
  bool ok = true;
  std::string error;  // which rank, step and element went wrong
};

// args gives the collective, count, op, root, nranks, chunk and counts (v); rank and in_place are
// set per rank. in_place: every rank's buffers alias as the collective's in-place form says.
VerifyResult verify(const CollArgs& args, Algo algo, bool in_place);
// The same over any builder (tests feed deliberately broken ones).
VerifyResult verify_with(const CollArgs& args, const std::function<Schedule(const CollArgs&)>& builder, bool in_place);
// Each rank's own arguments (all-to-all-v's counts differ by rank): args_of(r), whose rank is
// set to r; its in_place says whether that rank's buffers alias, so ranks may differ in it.
VerifyResult verify_ranks(const std::function<CollArgs(int rank)>& args_of, Algo algo);
VerifyResult verify_ranks_with(const std::function<CollArgs(int rank)>& args_of,
                               const std::function<Schedule(const CollArgs&)>& builder);

}  // namespace coral::collectives
