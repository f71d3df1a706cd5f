// Communicators: creation (blocking, non-blocking, in groups, several per process), split,
// shrink, teardown, and the questions NCCL callers ask of them.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "shim.h"

namespace coral_nccl {

namespace {

// NCCL keeps one last error for the process: a failure on one thread is what another reads.
std::mutex g_error_mu;
std::string g_last_error;

void set_last_error(const std::string& message) {
  std::lock_guard<std::mutex> lock(g_error_mu);
  g_last_error = message;
}

// device: the new communicator's GPU, or -1 for the thread's current one (if it has a GPU).
ncclComm_t make(coralComm_t c, bool blocking, int device = -1) {
  auto* comm = new ncclComm;
  comm->coral = c;
  comm->blocking = blocking;
  comm->device = device;
  int gpus = 0;
  if (device < 0 && coralDeviceCount(&gpus) == coralSuccess && gpus > 0) coralDeviceGet(&comm->device);
  return comm;
}

}  // namespace

// Rank and size, once Coral's communicator exists (a non-blocking one asks again later).
void learn(ncclComm_t comm) {
  if (comm->nranks > 0 || !comm->coral) return;
  coralResult_t state = coralSuccess;
  if (coralCommGetAsyncError(comm->coral, &state) != coralSuccess || state != coralSuccess) return;
  coralCommCount(comm->coral, &comm->nranks);
  coralCommUserRank(comm->coral, &comm->rank);
}

namespace {

ncclResult_t init(ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank, const ncclConfig_t* config,
                  const char* fn) {
  if (!out) return fail(ncclInvalidArgument, std::string(fn) + ": comm is NULL");
  *out = nullptr;
  coralConfig_t cc = CORAL_CONFIG_INITIALIZER;
  bool blocking = true;
  if (ncclResult_t r = config_from(config, &cc, &blocking, fn); r != ncclSuccess) return r;
  // In a group the ranks of one process meet at ncclGroupEnd: creation starts now, in the
  // background, and the group's end waits for it.
  const bool grouped = in_group();
  cc.blocking = (blocking && !grouped) ? 1 : 0;
  coralUniqueId cid;
  static_assert(sizeof cid == sizeof id, "NCCL's and Coral's unique ids have one size");
  std::memcpy(&cid, &id, sizeof cid);
  coralComm_t c = nullptr;
  const coralResult_t r = coralCommInitRankConfig(&c, nranks, cid, rank, &cc);
  if (r != coralSuccess && r != coralInProgress) {
    const ncclResult_t e = from(r, nullptr);
    note_group_error(e);  // inside a group, its end returns it too
    return e;
  }
  ncclComm_t comm = make(c, blocking);
  *out = comm;
  if (grouped && blocking) group_track_init(comm);
  learn(comm);
  return r == coralInProgress ? ncclInProgress : ncclSuccess;
}

// A split's or shrink's child. Coral makes the child of a non-blocking parent in the background
// (coralInProgress): NCCL hands it over at once, with ncclInProgress, to a caller that asked for
// non-blocking, and once it is up to one that asked to block.
ncclResult_t adopt(coralResult_t r, coralComm_t child, bool blocking, int device, coralComm_t parent,
                   ncclComm_t* newcomm) {
  if (r != coralSuccess && r != coralInProgress) return from(r, parent);
  if (!child) return ncclSuccess;  // NCCL_SPLIT_NOCOLOR
  if (r == coralInProgress && blocking) {
    if (coralResult_t state = wait_ready(child); state != coralSuccess) {
      const ncclResult_t e = from(state, child);
      coralCommAbort(child);
      return e;
    }
    r = coralSuccess;
  }
  *newcomm = make(child, blocking, device);  // as NCCL: the parent's GPU
  learn(*newcomm);
  return r == coralInProgress ? ncclInProgress : ncclSuccess;
}

}  // namespace

coralResult_t wait_ready(coralComm_t c) {
  coralResult_t state = coralInProgress;
  while (coralCommGetAsyncError(c, &state) == coralSuccess && state == coralInProgress)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return state;
}

ncclResult_t fail(ncclResult_t result, const std::string& message) {
  set_last_error(message);
  note_group_error(result);
  return result;
}

ncclResult_t from(coralResult_t r, coralComm_t comm) {
  if (r == coralSuccess || r == coralInProgress) return static_cast<ncclResult_t>(r);
  const char* m = coralGetLastError(comm);
  set_last_error(m && *m ? m : coralGetErrorString(r));
  return nccl_code(r);
}

ncclResult_t usable(ncclComm_t comm, const char* fn) {
  if (!comm) return fail(ncclInvalidArgument, std::string(fn) + ": comm is NULL");
  if (comm->revoked) return fail(ncclInvalidUsage, std::string(fn) + ": the communicator was revoked");
  if (comm->aborting) return fail(ncclInvalidUsage, std::string(fn) + ": the communicator is being aborted");
  learn(comm);
  // A non-blocking creation still under way: NCCL refuses the call (a caller that took
  // ncclInProgress for "queued" would lose it). Inside a group the group's end waits for it.
  if (comm->nranks == 0 && !comm->blocking && !in_group()) {
    coralResult_t state = coralSuccess;
    if (coralCommGetAsyncError(comm->coral, &state) == coralSuccess && state == coralInProgress)
      return fail(ncclInvalidArgument, std::string(fn) +
                                           ": the communicator is still being created: call it once "
                                           "ncclCommGetAsyncError gives ncclSuccess");
  }
  return ncclSuccess;
}

namespace {

// NCCL's checks of the fields that tune its kernels. Fields newer than the nccl.h this library
// is built against are skipped (if constexpr), and a caller built against an older one passes a
// smaller struct: only the fields it has (size) are read.
template <class Config>
ncclResult_t check_tuning(const Config& in, const char* fn) {
  const auto has = [&](const void* field) {
    return static_cast<size_t>(static_cast<const char*>(field) - reinterpret_cast<const char*>(&in)) + sizeof(int) <=
           in.size;
  };
  const auto bad = [&](const char* field, int v) {
    return fail(ncclInvalidArgument, std::string(fn) + ": config." + field + " = " + std::to_string(v) + " is invalid");
  };
  const auto given = [&](const int& v) { return has(&v) && v != NCCL_CONFIG_UNDEF_INT; };
  const auto not_flag = [&](const int& v) { return given(v) && v != 0 && v != 1; };
  if (given(in.cgaClusterSize) && in.cgaClusterSize < 0) return bad("cgaClusterSize", in.cgaClusterSize);
  if (given(in.minCTAs) && in.minCTAs <= 0) return bad("minCTAs", in.minCTAs);
  if (given(in.maxCTAs) && in.maxCTAs <= 0) return bad("maxCTAs", in.maxCTAs);
  if (given(in.minCTAs) && given(in.maxCTAs) && in.minCTAs > in.maxCTAs)
    return fail(ncclInvalidArgument, std::string(fn) + ": config.minCTAs " + std::to_string(in.minCTAs) +
                                         " is above config.maxCTAs " + std::to_string(in.maxCTAs));
  if (not_flag(in.splitShare)) return bad("splitShare", in.splitShare);
  if constexpr (requires { in.collnetEnable; })
    if (not_flag(in.collnetEnable)) return bad("collnetEnable", in.collnetEnable);
  if constexpr (requires { in.CTAPolicy; })
    if (given(in.CTAPolicy) && (in.CTAPolicy < 0 || in.CTAPolicy > 2)) return bad("CTAPolicy", in.CTAPolicy);
  if constexpr (requires { in.shrinkShare; })
    if (not_flag(in.shrinkShare)) return bad("shrinkShare", in.shrinkShare);
  if constexpr (requires { in.nvlsCTAs; })
    if (given(in.nvlsCTAs) && in.nvlsCTAs <= 0) return bad("nvlsCTAs", in.nvlsCTAs);
  if constexpr (requires { in.nChannelsPerNetPeer; })
    if (given(in.nChannelsPerNetPeer) && in.nChannelsPerNetPeer <= 0)
      return bad("nChannelsPerNetPeer", in.nChannelsPerNetPeer);
  if constexpr (requires { in.nvlinkCentricSched; })
    if (not_flag(in.nvlinkCentricSched)) return bad("nvlinkCentricSched", in.nvlinkCentricSched);
  return ncclSuccess;
}

}  // namespace

ncclResult_t config_from(const ncclConfig_t* in, coralConfig_t* out, bool* blocking, const char* fn) {
  // NCCL waits on a live peer as long as it takes (torch's watchdog, with its own timeout,
  // aborts a stuck communicator); Coral's default of minutes would cut a long checkpoint or
  // evaluation on one rank short. A dead peer is still noticed at once. CORAL_TIMEOUT, where
  // set, holds.
  if (!std::getenv("CORAL_TIMEOUT")) out->timeoutSeconds = 30 * 24 * 3600;
  if (!in) return ncclSuccess;
  if (in->size < offsetof(ncclConfig_t, cgaClusterSize) || in->magic != 0xcafebeef || in->version < 21400)
    return fail(ncclInvalidArgument, std::string(fn) +
                                         ": config was not initialised with NCCL_CONFIG_INITIALIZER (size, magic "
                                         "or version wrong)");
  if (in->blocking != NCCL_CONFIG_UNDEF_INT) {
    if (in->blocking != 0 && in->blocking != 1)
      return fail(ncclInvalidArgument,
                  std::string(fn) + ": config.blocking must be 0 or 1, not " + std::to_string(in->blocking));
    *blocking = in->blocking == 1;
  }
  // The other fields tune NCCL's kernels (Coral has its own tuner), but their values are checked
  // as NCCL checks them: a program that passes a bad one must hear it here too.
  return check_tuning(*in, fn);
}

}  // namespace coral_nccl

using namespace coral_nccl;

extern "C" {

ncclResult_t ncclGetVersion(int* version) {
  if (!version) return fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
  *version = NCCL_VERSION_CODE;  // the header this library was built against
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (!id) return fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
  coralUniqueId cid;
  // NCCL_COMM_ID: every rank makes the same id from the address, and rank 0 serves there.
  const char* at = std::getenv("NCCL_COMM_ID");
  const coralResult_t r = at ? coralGetUniqueIdAt(at, &cid) : coralGetUniqueId(&cid);
  if (r != coralSuccess && at)
    return fail(ncclInvalidArgument, std::string("ncclGetUniqueId: NCCL_COMM_ID=") + at +
                                         " is not <ipv4>:<port>, [<ipv6>]:<port> or <hostname>:<port> (" +
                                         coralGetLastError(nullptr) + ")");
  std::memcpy(id, &cid, sizeof cid);
  return from(r, nullptr);
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config) {
  return init(comm, nranks, id, rank, config, "ncclCommInitRankConfig");
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  return init(comm, nranks, id, rank, nullptr, "ncclCommInitRank");
}

ncclResult_t ncclCommInitRankScalable(ncclComm_t* comm, int nranks, int rank, int nId, ncclUniqueId* ids,
                                      ncclConfig_t* config) {
  if (nId < 1 || !ids) return fail(ncclInvalidArgument, "ncclCommInitRankScalable: needs nId >= 1 unique ids");
  if (nId > nranks)
    return fail(ncclInvalidArgument, "ncclCommInitRankScalable: nId " + std::to_string(nId) + " is above nranks " +
                                         std::to_string(nranks) + " (as NCCL, at most one id per rank)");
  // Coral's rendezvous is one store; every rank was handed the same list, so the first serves.
  return init(comm, nranks, ids[0], rank, config, "ncclCommInitRankScalable");
}

ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  if (!comms) return fail(ncclInvalidArgument, "ncclCommInitAll: comm is NULL");
  if (ndev < 1)
    return fail(ncclInvalidArgument, "ncclCommInitAll: ndev must be at least 1, not " + std::to_string(ndev));
  int count = 0;
  coralDeviceCount(&count);
  for (int i = 0; i < ndev; ++i) {
    const int dev = devlist ? devlist[i] : i;
    // Several communicators may share a GPU (Coral's ranks are independent of devices).
    if (dev < 0 || (count > 0 && dev >= count))
      return fail(ncclInvalidArgument, "ncclCommInitAll: device " + std::to_string(dev) + " does not exist (" +
                                           std::to_string(count) + " GPUs)");
  }
  ncclUniqueId id;
  if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess) return r;
  std::vector<ncclResult_t> results(ndev, ncclSuccess);
  std::vector<std::string> errors(ndev);
  std::vector<std::thread> threads;
  for (int i = 0; i < ndev; ++i)
    threads.emplace_back([&, i] {
      const int dev = devlist ? devlist[i] : i;
      if (count > 0) coralDeviceSet(dev);
      results[i] = init(&comms[i], ndev, id, i, nullptr, "ncclCommInitAll");
      if (results[i] != ncclSuccess) errors[i] = ncclGetLastError(nullptr);
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < ndev; ++i)
    if (results[i] != ncclSuccess) {
      for (int j = 0; j < ndev; ++j)
        if (comms[j]) ncclCommAbort(comms[j]), comms[j] = nullptr;
      return fail(results[i], errors[i]);
    }
  return ncclSuccess;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  if (!newcomm) return fail(ncclInvalidArgument, "ncclCommSplit: newcomm is NULL");
  *newcomm = nullptr;
  if (!comm) return fail(ncclInvalidArgument, "ncclCommSplit: comm is NULL");
  const Inside inside(comm);
  if (comm->aborting) return fail(ncclInvalidUsage, "ncclCommSplit: the communicator is being aborted");
  coralConfig_t cc = CORAL_CONFIG_INITIALIZER;
  bool blocking = comm->blocking;
  if (ncclResult_t r = config_from(config, &cc, &blocking, "ncclCommSplit"); r != ncclSuccess) return r;
  coralComm_t c = nullptr;
  if (in_group() && !comm->revoked) {
    // As NCCL: the child is created at the group's end, together with the group's others.
    *newcomm = color == NCCL_SPLIT_NOCOLOR ? nullptr : make(nullptr, blocking, comm->device);
    coralComm_t parent = comm->coral;
    group_make_child(comm, *newcomm, [=](coralComm_t* out) { return coralCommSplit(parent, color, key, out); });
    return ncclSuccess;
  }
  const OnDevice on_device(comm);
  if (!comm->revoked) {
    const coralResult_t r = coralCommSplit(comm->coral, color, key, &c);  // before `c` is read
    // NCCL's revoke is local: a peer may have revoked while this rank did not. Its split then
    // fails on the links the revoke closed, and it meets the others in the shrink below.
    if (r != coralRemoteError) return adopt(r, c, blocking, comm->device, comm->coral, newcomm);
  }
  // Coral splits over the parent's own links, which a revoke closed: the ranks first meet again
  // in a shrink that drops no one (it meets through the store, and works on a failed
  // communicator), then split that.
  coralComm_t all = nullptr;
  coralResult_t r = coralCommShrink(comm->coral, nullptr, 0, &all);
  if (r == coralInProgress) r = wait_ready(all);
  if (r != coralSuccess) {
    const ncclResult_t e = from(r, all ? all : comm->coral);
    if (all) coralCommAbort(all);
    return e;
  }
  r = coralCommSplit(all, color, key, &c);
  if (r == coralInProgress && c) r = wait_ready(c);  // before `all`, which its creation uses, goes
  if (r != coralSuccess && c) {
    const ncclResult_t e = from(r, c);
    coralCommAbort(c);
    coralCommDestroy(all);
    return e;
  }
  const ncclResult_t e = adopt(r, c, blocking, comm->device, all, newcomm);
  coralCommDestroy(all);
  return e;
}

ncclResult_t ncclCommShrink(ncclComm_t comm, int* exclude, int nexclude, ncclComm_t* newcomm, ncclConfig_t* config,
                            int flags) {
  if (!newcomm) return fail(ncclInvalidArgument, "ncclCommShrink: newcomm is NULL");
  *newcomm = nullptr;
  if (!comm) return fail(ncclInvalidArgument, "ncclCommShrink: comm is NULL");
  const Inside inside(comm);
  if (comm->aborting) return fail(ncclInvalidUsage, "ncclCommShrink: the communicator is being aborted");
  if (!exclude || nexclude <= 0)
    return fail(ncclInvalidArgument, "ncclCommShrink: excludeRanksList must name at least one rank (as NCCL)");
  if (flags != NCCL_SHRINK_DEFAULT && flags != NCCL_SHRINK_ABORT)
    return fail(ncclInvalidArgument, "ncclCommShrink: shrinkFlags must be NCCL_SHRINK_DEFAULT or NCCL_SHRINK_ABORT");
  coralConfig_t cc = CORAL_CONFIG_INITIALIZER;
  bool blocking = comm->blocking;
  if (ncclResult_t r = config_from(config, &cc, &blocking, "ncclCommShrink"); r != ncclSuccess) return r;
  coralComm_t c = nullptr;
  const OnDevice on_device(comm);
  // NCCL_SHRINK_ABORT ends the parent's operations in flight first: a revoke. Coral's shrink
  // itself works on a failed parent, so it needs nothing else.
  if (flags == NCCL_SHRINK_ABORT) {
    if (ncclResult_t e = ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT); e != ncclSuccess) return e;
  }
  if (in_group()) {
    bool excluded = false;  // NCCL: an excluded rank does not call; if it does, it gets no child
    for (int i = 0; i < nexclude; ++i) excluded |= exclude[i] == comm->rank;
    *newcomm = excluded ? nullptr : make(nullptr, blocking, comm->device);
    coralComm_t parent = comm->coral;
    std::vector<int> ex(exclude, exclude + nexclude);
    group_make_child(comm, *newcomm, [=](coralComm_t* out) mutable {
      return coralCommShrink(parent, ex.data(), static_cast<int>(ex.size()), out);
    });
    return ncclSuccess;
  }
  const coralResult_t r = coralCommShrink(comm->coral, exclude, nexclude, &c);  // before `c` is read
  return adopt(r, c, blocking, comm->device, comm->coral, newcomm);
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  if (!comm) return ncclSuccess;  // as NCCL (a NOCOLOR split's child is torn down alike)
  if (comm->revoked) return fail(ncclInvalidUsage, "ncclCommFinalize: the communicator was revoked");
  if (comm->finalized.exchange(true)) return fail(ncclInvalidArgument, "ncclCommFinalize: called twice");
  return ncclSuccess;  // ncclCommDestroy waits for this rank's operations
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm) return ncclSuccess;  // as NCCL
  // A group's child whose creation failed has no Coral side.
  const coralResult_t r = comm->coral ? coralCommDestroy(comm->coral) : coralSuccess;
  delete comm;
  return from(r, nullptr);
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  comm->aborting = true;
  release_own_hold(comm);
  // Calls in progress on other threads (one stuck on a peer, say) end with the revoke, which is
  // safe beside them; the communicator goes once they have left.
  if (comm->inside.load() > 0) coralCommRevoke(comm->coral);
  while (comm->inside.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const coralResult_t r = comm->coral ? coralCommAbort(comm->coral) : coralSuccess;
  delete comm;
  return from(r, nullptr);
}

ncclResult_t ncclCommRevoke(ncclComm_t comm, int flags) {
  if (!comm) return fail(ncclInvalidArgument, "ncclCommRevoke: comm is NULL");
  if (flags != NCCL_REVOKE_DEFAULT) return fail(ncclInvalidArgument, "ncclCommRevoke: revokeFlags must be 0");
  if (comm->revoked) return ncclSuccess;
  // Ends this rank's operations in flight, and the peers' that wait on it, with an error naming
  // this rank, instead of leaving them to the timeout.
  const coralResult_t r = coralCommRevoke(comm->coral);
  if (r != coralSuccess) return from(r, comm->coral);
  comm->revoked = true;
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* error) {
  if (!comm || !error) return fail(ncclInvalidArgument, "ncclCommGetAsyncError: comm or asyncError is NULL");
  if (comm->revoked) {
    // As NCCL once a revoke has stopped everything: quiet, ready for destroy, split or shrink.
    *error = ncclSuccess;
    return ncclSuccess;
  }
  coralResult_t state = coralSuccess;
  const coralResult_t r = coralCommGetAsyncError(comm->coral, &state);
  if (r != coralSuccess) return from(r, comm->coral);
  *error = nccl_code(state);
  if (state != coralSuccess && state != coralInProgress) from(state, comm->coral);
  learn(comm);
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (!comm || !count) return fail(ncclInvalidArgument, "ncclCommCount: comm or count is NULL");
  if (ncclResult_t bad = usable(comm, "ncclCommCount"); bad != ncclSuccess) return bad;
  return from(coralCommCount(comm->coral, count), comm->coral);
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (!comm || !rank) return fail(ncclInvalidArgument, "ncclCommUserRank: comm or rank is NULL");
  if (ncclResult_t bad = usable(comm, "ncclCommUserRank"); bad != ncclSuccess) return bad;
  return from(coralCommUserRank(comm->coral, rank), comm->coral);
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (!comm || !device) return fail(ncclInvalidArgument, "ncclCommCuDevice: comm or device is NULL");
  *device = comm->device < 0 ? 0 : comm->device;
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

const char* ncclGetLastError(ncclComm_t) {
  thread_local std::string copy;  // stays valid while another thread records a newer error
  std::lock_guard<std::mutex> lock(g_error_mu);
  copy = g_last_error;
  return copy.c_str();
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
void ncclResetDebugInit() {}
#pragma GCC diagnostic pop
// In no header, but exported by NCCL's library (what ncclResetDebugInit calls there).
__attribute__((visibility("default"))) void ncclResetDebugInitInternal() {}

}  // extern "C"

CORAL_NCCL_ALIAS(ncclGetVersion)
CORAL_NCCL_ALIAS(ncclGetUniqueId)
CORAL_NCCL_ALIAS(ncclCommInitRankConfig)
CORAL_NCCL_ALIAS(ncclCommInitRank)
CORAL_NCCL_ALIAS(ncclCommInitRankScalable)
CORAL_NCCL_ALIAS(ncclCommInitAll)
CORAL_NCCL_ALIAS(ncclCommSplit)
CORAL_NCCL_ALIAS(ncclCommShrink)
CORAL_NCCL_ALIAS(ncclCommFinalize)
CORAL_NCCL_ALIAS(ncclCommDestroy)
CORAL_NCCL_ALIAS(ncclCommAbort)
CORAL_NCCL_ALIAS(ncclCommRevoke)
CORAL_NCCL_ALIAS(ncclCommGetAsyncError)
CORAL_NCCL_ALIAS(ncclCommCount)
CORAL_NCCL_ALIAS(ncclCommUserRank)
CORAL_NCCL_ALIAS(ncclCommCuDevice)
CORAL_NCCL_ALIAS(ncclGetErrorString)
CORAL_NCCL_ALIAS(ncclGetLastError)
// Deprecated in the header, exported all the same: a program linked against an older NCCL calls it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
CORAL_NCCL_ALIAS(ncclResetDebugInit)
#pragma GCC diagnostic pop
