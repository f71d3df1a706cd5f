// libnccl.so.2 over Coral: NCCL's ABI (its own nccl.h), Coral's public C API underneath.
#pragma once

#include <coral/coral.h>
#include <coral/coral_device.h>
#include <nccl.h>

#include <string>

// NCCL's communicator: Coral's, plus what NCCL callers ask of it.
struct ncclComm {
  coralComm_t coral = nullptr;
  int rank = -1;
  int nranks = 0;
  int device = -1;       // the current GPU at init (ncclCommCuDevice)
  bool blocking = true;  // config.blocking
  bool revoked = false;  // ncclCommRevoke: only destroy, split and shrink remain
};

namespace coral_nccl {

// Records why a call failed (ncclGetLastError) and returns its result.
ncclResult_t fail(ncclResult_t result, const std::string& message);
// A Coral result as NCCL's (Coral's codes are NCCL's, but for coralTimeout), with Coral's
// message kept for ncclGetLastError.
ncclResult_t from(coralResult_t r, coralComm_t comm);
// Checks the communicator a call names: nullptr, revoked, or still being created.
ncclResult_t usable(ncclComm_t comm, const char* fn);
// ncclConfig_t's checks (size, magic, version) and Coral's config from it.
ncclResult_t config_from(const ncclConfig_t* in, coralConfig_t* out, bool* blocking, const char* fn);
// In a group: communicators whose creation ncclGroupEnd waits for (blocking ones).
void group_track_init(ncclComm_t comm);
bool in_group();

}  // namespace coral_nccl

// NCCL exports every function twice: ncclX, and pncclX for profilers to wrap.
#define CORAL_NCCL_ALIAS(name) extern "C" __attribute__((alias(#name), visibility("default"))) decltype(name) p##name;
