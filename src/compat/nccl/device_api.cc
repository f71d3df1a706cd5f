// NCCL's device API (nccl_device.h, NCCL 2.28): kernels that reach peers' memory themselves
// through a device communicator. Coral has no such path. Its host entry points are exported all
// the same, since a program built against NCCL 2.28 references them whether it uses them or
// not (torch's symmetric memory does: without them `import torch` fails to load); creating a
// device communicator or its resources says it is not supported. The team queries are
// arithmetic on the communicator and are answered: with no load/store access between ranks
// through Coral, a rank's LSA team is itself and its rail team is the world.
#include "shim.h"

#if __has_include(<nccl_device.h>) && __has_include(<cuda_runtime.h>)
#include <nccl_device.h>  // NCCL's own declarations: ours below must match them
#else
struct ncclTeam {
  int nRanks, rank, stride;
};
typedef struct ncclTeam ncclTeam_t;
typedef struct ncclDevComm ncclDevComm_t;
typedef struct ncclDevCommRequirements ncclDevCommRequirements_t;
typedef struct ncclDevResourceRequirements ncclDevResourceRequirements_t;
typedef struct ncclLsaBarrierHandle ncclLsaBarrierHandle_t;
typedef struct ncclGinBarrierHandle ncclGinBarrierHandle_t;
typedef struct ncclLLA2AHandle ncclLLA2AHandle_t;
#endif

using coral_nccl::fail;

namespace {

ncclResult_t unsupported(const char* fn) {
  return fail(ncclInvalidUsage, std::string(fn) + ": NCCL's device API (nccl_device.h) is not supported by Coral");
}

int world_rank(ncclComm_t comm) {
  int r = -1;
  if (comm) coralCommUserRank(comm->coral, &r);
  return r;
}

}  // namespace

extern "C" {

ncclResult_t ncclDevCommCreate(ncclComm_t, ncclDevCommRequirements_t const*, ncclDevComm_t*) {
  return unsupported("ncclDevCommCreate");
}

ncclResult_t ncclDevCommDestroy(ncclComm_t, ncclDevComm_t const*) { return unsupported("ncclDevCommDestroy"); }

ncclResult_t ncclLsaBarrierCreateRequirement(ncclTeam_t, int, ncclLsaBarrierHandle_t*, ncclDevResourceRequirements_t*) {
  return unsupported("ncclLsaBarrierCreateRequirement");
}

ncclResult_t ncclGinBarrierCreateRequirement(ncclComm_t, ncclTeam_t, int, ncclGinBarrierHandle_t*,
                                             ncclDevResourceRequirements_t*) {
  return unsupported("ncclGinBarrierCreateRequirement");
}

ncclResult_t ncclLLA2ACreateRequirement(int, int, ncclLLA2AHandle_t*, ncclDevResourceRequirements_t*) {
  return unsupported("ncclLLA2ACreateRequirement");
}

// No slots: there is no device all-to-all to size.
int ncclLLA2ACalcSlots(int, int) { return 0; }

ncclTeam_t ncclTeamWorld(ncclComm_t comm) {
  int n = 0;
  if (comm) coralCommCount(comm->coral, &n);
  return ncclTeam_t{n, world_rank(comm), 1};
}

ncclTeam_t ncclTeamLsa(ncclComm_t comm) { return ncclTeam_t{comm ? 1 : 0, 0, 1}; }

ncclTeam_t ncclTeamRail(ncclComm_t comm) { return ncclTeamWorld(comm); }

// Member `rank` of a team this rank belongs to, as a world rank (-1: outside the world).
int ncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t team, int rank) {
  const ncclTeam_t world = ncclTeamWorld(comm);
  const int w = world.rank + (rank - team.rank) * team.stride;
  return w >= 0 && w < world.nRanks ? w : -1;
}

// The same member's index in this rank's LSA team: 0 for this rank, -1 for any other.
int ncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t team, int rank) {
  const int w = ncclTeamRankToWorld(comm, team, rank);
  return w >= 0 && w == world_rank(comm) ? 0 : -1;
}

}  // extern "C"

CORAL_NCCL_ALIAS(ncclDevCommCreate)
CORAL_NCCL_ALIAS(ncclDevCommDestroy)
CORAL_NCCL_ALIAS(ncclLsaBarrierCreateRequirement)
CORAL_NCCL_ALIAS(ncclGinBarrierCreateRequirement)
CORAL_NCCL_ALIAS(ncclLLA2ACreateRequirement)
CORAL_NCCL_ALIAS(ncclLLA2ACalcSlots)
// nccl_device.h overloads these names in C++ (device-communicator forms), so the alias names
// its type.
#define CORAL_NCCL_ALIAS_AS(name, ret, ...) \
  extern "C" __attribute__((alias(#name), visibility("default"))) ret p##name(__VA_ARGS__);
CORAL_NCCL_ALIAS_AS(ncclTeamWorld, ncclTeam_t, ncclComm_t)
CORAL_NCCL_ALIAS_AS(ncclTeamLsa, ncclTeam_t, ncclComm_t)
CORAL_NCCL_ALIAS_AS(ncclTeamRail, ncclTeam_t, ncclComm_t)
CORAL_NCCL_ALIAS_AS(ncclTeamRankToWorld, int, ncclComm_t, ncclTeam_t, int)
CORAL_NCCL_ALIAS_AS(ncclTeamRankToLsa, int, ncclComm_t, ncclTeam_t, int)
