// Collectives, point-to-point, groups, PreMulSum, buffer registration and memory. NCCL's
// dtype, op and result values are Coral's, so arguments pass through; Coral checks them and
// says what was wrong.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "shim.h"

namespace coral_nccl {

namespace {

thread_local int t_depth = 0;
thread_local ncclResult_t t_group_error = ncclSuccess;  // see note_group_error
thread_local std::vector<ncclComm_t> t_inits;           // blocking creations started in this group
// Splits and shrinks started in this group, each on its thread (group_make_child).
struct Child {
  ncclComm_t parent, comm;
  std::thread thread;
  coralResult_t result = coralSuccess;
  coralComm_t made = nullptr;
  std::string error;
};
thread_local std::vector<std::unique_ptr<Child>> t_children;
// The communicators this thread's open group has calls on: counted inside until its outermost
// end, which runs them (so an abort from another thread waits for that too).
thread_local std::vector<ncclComm_t> t_held;

void hold(ncclComm_t comm) {
  if (t_depth == 0 || std::find(t_held.begin(), t_held.end(), comm) != t_held.end()) return;
  comm->inside.fetch_add(1);
  t_held.push_back(comm);
}

void release_held() {
  for (ncclComm_t c : t_held) c->inside.fetch_sub(1);
  t_held.clear();
}

coralDataType_t dt(ncclDataType_t t) { return static_cast<coralDataType_t>(t); }
coralRedOp_t op(ncclRedOp_t o) { return static_cast<coralRedOp_t>(o); }

// Counted before the checks, so that an abort from another thread either refuses the call or
// waits for it.
#define CHECK_COMM(fn)                                                     \
  const Inside inside(comm);                                               \
  if (ncclResult_t bad = usable(comm, fn); bad != ncclSuccess) return bad; \
  hold(comm);                                                              \
  const OnDevice on_device(comm);

// At the outermost end of a group, before its calls run (they may be on the parents): the
// children the group's splits and shrinks made. The first failure among them, after `first`.
ncclResult_t settle_children(ncclResult_t first) {
  std::vector<std::unique_ptr<Child>> children;
  children.swap(t_children);
  for (auto& ch : children) {
    ch->thread.join();
    ch->parent->inside.fetch_sub(1);
    if (ch->result != coralSuccess && ch->result != coralInProgress) {
      if (first == ncclSuccess) first = fail(nccl_code(ch->result), ch->error);
      if (ch->made) coralCommAbort(ch->made);
      continue;
    }
    if (ch->comm) {
      ch->comm->coral = ch->made;
      learn(ch->comm);
    } else if (ch->made) {
      coralCommDestroy(ch->made);  // made where NCCL gives none (a rank that was excluded)
    }
  }
  return first;
}

// At the outermost end of a group, the communicators it created meet: all their ranks have
// been started. The first failure among them, after `first`.
ncclResult_t settle_inits(ncclResult_t first, const char* fn) {
  std::vector<ncclComm_t> inits;
  inits.swap(t_inits);
  for (ncclComm_t c : inits) {
    const coralResult_t state = wait_ready(c->coral);
    if (state != coralSuccess && first == ncclSuccess) first = from(state, c->coral);
    usable(c, fn);
  }
  return first;
}

}  // namespace

bool in_group() { return t_depth > 0; }

void note_group_error(ncclResult_t result) {
  if (t_depth > 0 && t_group_error == ncclSuccess && result != ncclSuccess && result != ncclInProgress)
    t_group_error = result;
}

void release_own_hold(ncclComm_t comm) {
  if (auto it = std::find(t_held.begin(), t_held.end(), comm); it != t_held.end()) {
    comm->inside.fetch_sub(1);
    t_held.erase(it);
  }
}
void group_track_init(ncclComm_t comm) { t_inits.push_back(comm); }

void group_make_child(ncclComm_t parent, ncclComm_t child, std::function<coralResult_t(coralComm_t*)> create) {
  auto ch = std::make_unique<Child>();
  ch->parent = parent;
  ch->comm = child;
  parent->inside.fetch_add(1);  // an abort of the parent waits for the child's creation
  Child* c = ch.get();
  ch->thread = std::thread([c, create = std::move(create)] {
    const OnDevice on_device(c->parent);  // as NCCL: the child is on the parent's GPU
    c->result = create(&c->made);
    if (c->result == coralInProgress && c->made) c->result = wait_ready(c->made);
    if (c->result != coralSuccess) {
      const char* m = coralGetLastError(c->made);
      c->error = m && *m ? m : coralGetLastError(nullptr);
    }
  });
  t_children.push_back(std::move(ch));
}

}  // namespace coral_nccl

using namespace coral_nccl;

extern "C" {

ncclResult_t ncclAllReduce(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t o, ncclComm_t comm,
                           cudaStream_t stream) {
  CHECK_COMM("ncclAllReduce")
  return from(coralAllReduce(s, r, n, dt(t), op(o), comm->coral, stream), comm->coral);
}

ncclResult_t ncclReduce(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t o, int root, ncclComm_t comm,
                        cudaStream_t stream) {
  CHECK_COMM("ncclReduce")
  return from(coralReduce(s, r, n, dt(t), op(o), root, comm->coral, stream), comm->coral);
}

ncclResult_t ncclBroadcast(const void* s, void* r, size_t n, ncclDataType_t t, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  CHECK_COMM("ncclBroadcast")
  return from(coralBroadcast(s, r, n, dt(t), root, comm->coral, stream), comm->coral);
}

ncclResult_t ncclBcast(void* buf, size_t n, ncclDataType_t t, int root, ncclComm_t comm, cudaStream_t stream) {
  CHECK_COMM("ncclBcast")
  return from(coralBroadcast(buf, buf, n, dt(t), root, comm->coral, stream), comm->coral);
}

ncclResult_t ncclReduceScatter(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t o, ncclComm_t comm,
                               cudaStream_t stream) {
  CHECK_COMM("ncclReduceScatter")
  return from(coralReduceScatter(s, r, n, dt(t), op(o), comm->coral, stream), comm->coral);
}

ncclResult_t ncclAllGather(const void* s, void* r, size_t n, ncclDataType_t t, ncclComm_t comm, cudaStream_t stream) {
  CHECK_COMM("ncclAllGather")
  return from(coralAllGather(s, r, n, dt(t), comm->coral, stream), comm->coral);
}

ncclResult_t ncclAlltoAll(const void* s, void* r, size_t n, ncclDataType_t t, ncclComm_t comm, cudaStream_t stream) {
  CHECK_COMM("ncclAlltoAll")
  return from(coralAllToAll(s, r, n, dt(t), comm->coral, stream), comm->coral);
}

ncclResult_t ncclGather(const void* s, void* r, size_t n, ncclDataType_t t, int root, ncclComm_t comm,
                        cudaStream_t stream) {
  CHECK_COMM("ncclGather")
  return from(coralGather(s, r, n, dt(t), root, comm->coral, stream), comm->coral);
}

ncclResult_t ncclScatter(const void* s, void* r, size_t n, ncclDataType_t t, int root, ncclComm_t comm,
                         cudaStream_t stream) {
  CHECK_COMM("ncclScatter")
  return from(coralScatter(s, r, n, dt(t), root, comm->coral, stream), comm->coral);
}

ncclResult_t ncclSend(const void* s, size_t n, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t stream) {
  CHECK_COMM("ncclSend")
  return from(coralSend(s, n, dt(t), peer, comm->coral, stream), comm->coral);
}

ncclResult_t ncclRecv(void* r, size_t n, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t stream) {
  CHECK_COMM("ncclRecv")
  return from(coralRecv(r, n, dt(t), peer, comm->coral, stream), comm->coral);
}

ncclResult_t ncclGroupStart() {
  ++t_depth;
  return from(coralGroupStart(), nullptr);
}

ncclResult_t ncclGroupEnd() {
  if (t_depth == 0) return fail(ncclInvalidUsage, "ncclGroupEnd: no ncclGroupStart to end");
  if (t_depth > 1) {
    --t_depth;
    return from(coralGroupEnd(), nullptr);
  }
  // A call of the group failed its checks: the group is dropped unrun, and its first failure
  // returned (ncclGetLastError still says what it was).
  const ncclResult_t failed = settle_children(t_group_error);
  t_group_error = ncclSuccess;
  const ncclResult_t r = failed != ncclSuccess ? (coralGroupDiscard(), failed) : from(coralGroupEnd(), nullptr);
  t_depth = 0;
  release_held();
  return settle_inits(r, "ncclGroupEnd");
}

// As NCCL: the outermost level prices the group's calls and drops them unrun (a simulation
// leaves the buffers alone), and the group is over. NCCL's estimate is its own cost model's for
// the group's last collective; Coral's is its cost model's for all of them (coralGroupEstimate).
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* info) {
  if (!info) return ncclGroupEnd();  // as NCCL: nothing to simulate into, a plain end
  if (t_depth == 0) return fail(ncclInvalidUsage, "ncclGroupSimulateEnd: no ncclGroupStart to end");
  if (--t_depth > 0) return from(coralGroupDiscard(), nullptr);  // an inner level: only closed
  t_group_error = ncclSuccess;                                   // the group is dropped unrun anyway
  const ncclResult_t made = settle_children(ncclSuccess);        // the children come up all the same
  // A caller built against an older nccl.h passes a smaller struct: only its fields are ours.
  const ncclSimInfo_t fresh = NCCL_SIM_INFO_INITIALIZER;
  ncclSimInfo_t sim = fresh;
  size_t size = 0;
  std::memcpy(&size, &info->size, sizeof size);
  size = std::min(size, sizeof sim);
  std::memcpy(&sim, info, size);
  ncclResult_t r = ncclSuccess;
  double us = 0;
  if (size < offsetof(ncclSimInfo_t, version) || sim.magic != fresh.magic)
    r = fail(ncclInvalidArgument, "ncclGroupSimulateEnd: simInfo was not initialized with NCCL_SIM_INFO_INITIALIZER");
  else
    r = made != ncclSuccess ? made : from(coralGroupEstimate(&us), nullptr);
  coralGroupDiscard();
  release_held();
  r = settle_inits(r, "ncclGroupSimulateEnd");  // those still come up
  if (r != ncclSuccess) return r;
  sim.estimatedTime = static_cast<float>(us);
  std::memcpy(info, &sim, size);
  return ncclSuccess;
}

ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* o, void* scalar, ncclDataType_t t, ncclScalarResidence_t res,
                                      ncclComm_t comm) {
  CHECK_COMM("ncclRedOpCreatePreMulSum")
  if (!o) return fail(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: op is NULL");
  coralRedOp_t c = coralSum;
  const coralResult_t r =
      coralRedOpCreatePreMulSum(&c, scalar, dt(t), static_cast<coralScalarResidence_t>(res), comm->coral);
  *o = static_cast<ncclRedOp_t>(c);
  return from(r, comm->coral);
}

ncclResult_t ncclRedOpDestroy(ncclRedOp_t o, ncclComm_t comm) {
  CHECK_COMM("ncclRedOpDestroy")
  return from(coralRedOpDestroy(op(o), comm->coral), comm->coral);
}

ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  CHECK_COMM("ncclCommRegister")
  return from(coralCommRegister(comm->coral, buff, size, handle), comm->coral);
}

ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  if (!handle) return ncclSuccess;  // as NCCL, whose ncclCommRegister hands out NULL where it skips
  CHECK_COMM("ncclCommDeregister")
  return from(coralCommDeregister(comm->coral, handle), comm->coral);
}

ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  if (!ptr) return fail(ncclInvalidArgument, "ncclMemAlloc: ptr is NULL");
  return from(coralDeviceMalloc(ptr, size), nullptr);
}

ncclResult_t ncclMemFree(void* ptr) { return from(coralDeviceFree(ptr), nullptr); }

ncclResult_t ncclCommWindowRegister(ncclComm_t, void*, size_t, ncclWindow_t* win, int) {
  if (win) *win = nullptr;
  return fail(ncclInvalidUsage,
              "ncclCommWindowRegister: Coral has no symmetric-memory windows; use "
              "ncclCommRegister for zero-copy buffers");
}

ncclResult_t ncclCommWindowDeregister(ncclComm_t, ncclWindow_t) {
  return fail(ncclInvalidUsage, "ncclCommWindowDeregister: Coral has no symmetric-memory windows");
}

}  // extern "C"

CORAL_NCCL_ALIAS(ncclAllReduce)
CORAL_NCCL_ALIAS(ncclReduce)
CORAL_NCCL_ALIAS(ncclBroadcast)
CORAL_NCCL_ALIAS(ncclBcast)
CORAL_NCCL_ALIAS(ncclReduceScatter)
CORAL_NCCL_ALIAS(ncclAllGather)
CORAL_NCCL_ALIAS(ncclAlltoAll)
CORAL_NCCL_ALIAS(ncclGather)
CORAL_NCCL_ALIAS(ncclScatter)
CORAL_NCCL_ALIAS(ncclSend)
CORAL_NCCL_ALIAS(ncclRecv)
CORAL_NCCL_ALIAS(ncclGroupStart)
CORAL_NCCL_ALIAS(ncclGroupEnd)
CORAL_NCCL_ALIAS(ncclGroupSimulateEnd)
CORAL_NCCL_ALIAS(ncclRedOpCreatePreMulSum)
CORAL_NCCL_ALIAS(ncclRedOpDestroy)
CORAL_NCCL_ALIAS(ncclCommRegister)
CORAL_NCCL_ALIAS(ncclCommDeregister)
CORAL_NCCL_ALIAS(ncclMemAlloc)
CORAL_NCCL_ALIAS(ncclMemFree)
CORAL_NCCL_ALIAS(ncclCommWindowRegister)
CORAL_NCCL_ALIAS(ncclCommWindowDeregister)
