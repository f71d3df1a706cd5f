// libnccl.so.2 over Coral: NCCL's ABI (its own nccl.h), Coral's public C API underneath.
#pragma once

#include <coral/coral.h>
#include <coral/coral_device.h>
#include <nccl.h>

#include <atomic>
#include <functional>
#include <string>

// NCCL's communicator: Coral's, plus what NCCL callers ask of it.
struct ncclComm {
  coralComm_t coral = nullptr;
  int rank = -1;
  int nranks = 0;
  int device = -1;       // the current GPU at init (ncclCommCuDevice)
  bool blocking = true;  // config.blocking
  // ncclCommRevoke, maybe from a watchdog thread: only destroy, split and shrink remain.
  std::atomic<bool> revoked{false};
  std::atomic<bool> finalized{false};  // ncclCommFinalize was called
  // torch's watchdog calls ncclCommAbort from its own thread while another may be in a call on
  // the communicator: abort ends those calls and frees the communicator once they have left.
  std::atomic<int> inside{0};
  std::atomic<bool> aborting{false};
};

namespace coral_nccl {

// Inside a group: its first failure, which the outermost ncclGroupEnd returns (dropping the
// group's calls), as NCCL does.
void note_group_error(ncclResult_t result);
// Records why a call failed (ncclGetLastError) and returns its result.
ncclResult_t fail(ncclResult_t result, const std::string& message);
// A Coral code as NCCL's: the same numbers, but NCCL has no timeout code (the message says).
inline ncclResult_t nccl_code(coralResult_t r) {
  return r == coralTimeout ? ncclSystemError : static_cast<ncclResult_t>(r);
}
// A Coral result as NCCL's (nccl_code), with Coral's
// message kept for ncclGetLastError.
ncclResult_t from(coralResult_t r, coralComm_t comm);
// Checks the communicator a call names: nullptr, revoked, or still being created.
ncclResult_t usable(ncclComm_t comm, const char* fn);
// ncclConfig_t's checks (size, magic, version) and Coral's config from it.
ncclResult_t config_from(const ncclConfig_t* in, coralConfig_t* out, bool* blocking, const char* fn);
// Waits for a communicator Coral creates in the background to be up; its creation's result.
coralResult_t wait_ready(coralComm_t c);
// In a group: communicators whose creation ncclGroupEnd waits for (blocking ones).
void group_track_init(ncclComm_t comm);
// In a group: a split's or shrink's child, made by `create` on a thread of its own from now on
// (one thread may split several communicators of a job, whose splits must all be under way at
// once), handed to `child` at the outermost ncclGroupEnd (null child: NCCL_SPLIT_NOCOLOR).
void group_make_child(ncclComm_t parent, ncclComm_t child, std::function<coralResult_t(coralComm_t*)> create);
// A communicator whose Coral side now exists: its rank and size (see ncclComm).
void learn(ncclComm_t comm);
bool in_group();
// ncclCommAbort on a thread whose open group has calls on comm: that thread's own hold goes
// (the abort would otherwise wait for itself).
void release_own_hold(ncclComm_t comm);

// A call that uses a communicator, counted before anything checks it (see ncclComm::inside).
class Inside {
 public:
  explicit Inside(ncclComm* comm) : comm_(comm) {
    if (comm_) comm_->inside.fetch_add(1);
  }
  ~Inside() {
    if (comm_) comm_->inside.fetch_sub(1);
  }
  Inside(const Inside&) = delete;
  Inside& operator=(const Inside&) = delete;

 private:
  ncclComm* comm_;
};

// NCCL runs a communicator's calls on the GPU it was created on, whatever device the caller
// has current (one thread may drive several GPUs' communicators); Coral runs them on the
// current one. So a call switches to its communicator's GPU and back.
class OnDevice {
 public:
  explicit OnDevice(const ncclComm* comm) {
    int now = -1;
    if (comm->device >= 0 && coralDeviceGet(&now) == coralSuccess && now != comm->device &&
        coralDeviceSet(comm->device) == coralSuccess)
      prev_ = now;
  }
  ~OnDevice() {
    if (prev_ >= 0) coralDeviceSet(prev_);
  }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;

 private:
  int prev_ = -1;
};

}  // namespace coral_nccl

// NCCL exports every function twice: ncclX, and pncclX for profilers to wrap.
#define CORAL_NCCL_ALIAS(name) extern "C" __attribute__((alias(#name), visibility("default"))) decltype(name) p##name;
