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

// args gives the collective, count, op, root, nranks and chunk; rank is ignored.
VerifyResult verify(const CollArgs& args, Algo algo, bool in_place);
// The same over any builder (tests feed deliberately broken ones).
VerifyResult verify_with(const CollArgs& args, const std::function<Schedule(const CollArgs&)>& builder, bool in_place);

}  // namespace coral::collectives
