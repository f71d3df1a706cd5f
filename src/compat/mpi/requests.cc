// Non-blocking calls on Coral behind MPI generalized requests, so that every MPI call taking a
// request accepts them, mixed freely with MPI's own. A Coral request runs by itself (Coral's
// progress thread); what MPI_Wait and friends add is its completion: the unpacking left to do,
// MPI_Grequest_complete, and the error, if any, through the communicator's handler.
#include <sched.h>

#include <atomic>
#include <mutex>
#include <unordered_map>

#include "interpose.h"

namespace coral_mpi {

namespace {

std::mutex g_mu;
std::unordered_map<MPI_Request, std::unique_ptr<Pending>> g_pending;  // by the user's handle
std::vector<std::unique_ptr<Pending>> g_orphans;                      // MPI_Request_free'd, running
std::atomic<int> g_live{0};      // g_pending.size(): MPI's own requests skip the lock when 0
std::atomic<int> g_orphaned{0};  // g_orphans.size()

int query_fn(void*, MPI_Status* status) {
  PMPI_Status_set_elements(status, MPI_BYTE, 0);
  PMPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
  return MPI_SUCCESS;
}
int free_fn(void*) { return MPI_SUCCESS; }
int cancel_fn(void*, int) { return MPI_SUCCESS; }  // a collective cannot be cancelled: no effect

Pending* find(MPI_Request r) {
  if (g_live.load(std::memory_order_acquire) == 0 || r == MPI_REQUEST_NULL) return nullptr;
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_pending.find(r);
  return it == g_pending.end() ? nullptr : it->second.get();
}

constexpr long kBlock = -1;  // progress(): wait in Coral until done

// Drives p's Coral request, waiting up to wait_us (kBlock: until done); once it is done,
// finishes it and completes the generalized request.
bool progress(Pending* p, long wait_us) {
  if (p->done) return true;
  int done = 1;
  coralResult_t r = wait_us == kBlock ? coralWait(p->creq) : coralWaitFor(p->creq, wait_us, &done);
  if (!done && r == coralSuccess) return false;
  p->done = true;
  p->creq = nullptr;
  p->result = r;
  if (r == coralSuccess) {
    for (auto& f : p->finish) f();
  } else {
    const char* m = coralGetLastError(nullptr);
    p->message = m ? m : "";
  }
  p->finish.clear();
  p->temps.clear();
  PMPI_Grequest_complete(p->handle);
  return true;
}

// The user's handle was freed by MPI: forget it; its failure, if any, goes to the error handler.
int retire(MPI_Request original, int rc, MPI_Status* status) {
  std::unique_ptr<Pending> p;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_pending.find(original);
    if (it == g_pending.end()) return rc;
    p = std::move(it->second);
    g_pending.erase(it);
    g_live.fetch_sub(1, std::memory_order_release);
  }
  if (p->result == coralSuccess) return rc;
  const int code = fail(p->mpi, p->call, p->result, p->message);
  if (status && status != MPI_STATUS_IGNORE) status->MPI_ERROR = code;
  return code;
}

struct Ours {
  int index;
  Pending* p;
  MPI_Request handle;
};

std::vector<Ours> ours_in(int n, const MPI_Request* reqs) {
  std::vector<Ours> v;
  if (g_live.load(std::memory_order_acquire) == 0) return v;
  for (int i = 0; i < n; ++i)
    if (Pending* p = find(reqs[i])) v.push_back({i, p, reqs[i]});
  return v;
}

// Non-blocking progress of all of ours; true if any is done.
bool progress_all(const std::vector<Ours>& ours) {
  bool any = false;
  for (const Ours& o : ours) any |= progress(o.p, 0);
  return any;
}

MPI_Status* status_at(MPI_Status* statuses, int i) {
  return statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
}

// After PMPI freed the requests at `indices`, retires the ones that were ours.
int retire_indices(const std::vector<Ours>& ours, int rc, int count, const int* indices, MPI_Status* statuses) {
  int first = MPI_SUCCESS;
  for (int k = 0; k < count; ++k)
    for (const Ours& o : ours)
      if (o.index == indices[k]) {
        const int r = retire(o.handle, MPI_SUCCESS, status_at(statuses, k));
        if (first == MPI_SUCCESS) first = r;
      }
  return first != MPI_SUCCESS ? first : rc;
}

// After PMPI freed every request of the array (Waitall, Testall): as MPI reports errors there.
int retire_all(const std::vector<Ours>& ours, int rc, MPI_Status* statuses) {
  int first = MPI_SUCCESS;
  for (const Ours& o : ours) {
    const int r = retire(o.handle, MPI_SUCCESS, status_at(statuses, o.index));
    if (first == MPI_SUCCESS) first = r;
  }
  if (first == MPI_SUCCESS) return rc;
  return statuses == MPI_STATUSES_IGNORE ? first : MPI_ERR_IN_STATUS;
}

// Waiting on Coral's requests. Blocking in Coral alone would leave MPI's own traffic undriven,
// and MPI's progress rule lets a peer need it (a send of this rank's, a collective MPI runs)
// before that peer reaches the collective this rank waits on. So the wait sleeps in Coral in
// slices and tests `reqs` between them: that drives MPI, and ours among them stay incomplete
// until progress() completes them. Shorter slices, or ones that start short and grow, cost a
// quick call more on an oversubscribed host (bench/mpi/results).
constexpr long kSliceUs = 1000;
void wait_ours(const Ours* ours, size_t count, MPI_Request* reqs, int n) {
  for (;;) {
    bool all = true;
    for (size_t i = 0; i < count; ++i) all &= progress(ours[i].p, all ? kSliceUs : 0);
    if (all) return;
    int flag = 0;
    PMPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE);
  }
}

}  // namespace

int start_request(std::unique_ptr<Pending> p, MPI_Request* request) {
  PMPI_Grequest_start(query_fn, free_fn, cancel_fn, nullptr, &p->handle);
  *request = p->handle;
  std::lock_guard<std::mutex> lock(g_mu);
  g_pending.emplace(p->handle, std::move(p));
  g_live.fetch_add(1, std::memory_order_release);
  return MPI_SUCCESS;
}

void reap_orphans() {
  if (g_orphaned.load(std::memory_order_acquire) == 0) return;
  std::lock_guard<std::mutex> lock(g_mu);
  for (auto it = g_orphans.begin(); it != g_orphans.end();) {
    if (progress(it->get(), 0)) {  // MPI frees the generalized request now
      it = g_orphans.erase(it);
      g_orphaned.fetch_sub(1, std::memory_order_release);
    } else {
      ++it;
    }
  }
}

void settle_comm(const Comm* c) {
  std::lock_guard<std::mutex> lock(g_mu);
  for (auto& [h, p] : g_pending)
    if (p->owner == c) {
      progress(p.get(), kBlock);
      p->owner = nullptr;
      p->mpi = MPI_COMM_WORLD;
    }
  for (auto& p : g_orphans)
    if (p->owner == c) progress(p.get(), kBlock);
}

void complete_all() {
  std::lock_guard<std::mutex> lock(g_mu);
  for (auto& [h, p] : g_pending) progress(p.get(), kBlock);
  for (auto& p : g_orphans) progress(p.get(), kBlock);
  g_orphans.clear();
  g_orphaned.store(0);
}

}  // namespace coral_mpi

using namespace coral_mpi;

extern "C" int MPI_Wait(MPI_Request* req, MPI_Status* status) {
  Pending* p = find(*req);
  if (!p) return PMPI_Wait(req, status);
  const Ours one{0, p, *req};
  wait_ours(&one, 1, req, 1);
  const MPI_Request h = *req;
  return retire(h, PMPI_Wait(req, status), status);
}

extern "C" int MPI_Test(MPI_Request* req, int* flag, MPI_Status* status) {
  Pending* p = find(*req);
  if (!p) return PMPI_Test(req, flag, status);
  progress(p, 0);  // completes the generalized request once Coral's part is done
  // PMPI_Test either way: it retires a complete request, and otherwise drives MPI's progress,
  // which a peer may need (to finish this rank's large send) before it can join the collective.
  const MPI_Request h = *req;
  const int rc = PMPI_Test(req, flag, status);
  return *flag ? retire(h, rc, status) : rc;
}

extern "C" int MPI_Waitall(int n, MPI_Request* reqs, MPI_Status* statuses) {
  const std::vector<Ours> ours = ours_in(n, reqs);
  if (ours.empty()) return PMPI_Waitall(n, reqs, statuses);
  wait_ours(ours.data(), ours.size(), reqs, n);
  return retire_all(ours, PMPI_Waitall(n, reqs, statuses), statuses);
}

extern "C" int MPI_Testall(int n, MPI_Request* reqs, int* flag, MPI_Status* statuses) {
  const std::vector<Ours> ours = ours_in(n, reqs);
  if (ours.empty()) return PMPI_Testall(n, reqs, flag, statuses);
  progress_all(ours);
  const int rc = PMPI_Testall(n, reqs, flag, statuses);
  return *flag ? retire_all(ours, rc, statuses) : rc;
}

extern "C" int MPI_Waitany(int n, MPI_Request* reqs, int* index, MPI_Status* status) {
  const std::vector<Ours> ours = ours_in(n, reqs);
  if (ours.empty()) return PMPI_Waitany(n, reqs, index, status);
  for (;;) {
    int flag = 0, rc;
    if (progress_all(ours)) {
      rc = PMPI_Waitany(n, reqs, index, status);  // one of ours is complete: returns at once
      flag = 1;
    } else {
      rc = PMPI_Testany(n, reqs, index, &flag, status);
    }
    if (flag) return *index == MPI_UNDEFINED ? rc : retire_indices(ours, rc, 1, index, nullptr);
    sched_yield();  // any of MPI's requests may end it, so it polls; Coral's thread needs the core
  }
}

extern "C" int MPI_Testany(int n, MPI_Request* reqs, int* index, int* flag, MPI_Status* status) {
  const std::vector<Ours> ours = ours_in(n, reqs);
  if (ours.empty()) return PMPI_Testany(n, reqs, index, flag, status);
  progress_all(ours);
  const int rc = PMPI_Testany(n, reqs, index, flag, status);
  if (!*flag || *index == MPI_UNDEFINED) return rc;
  return retire_indices(ours, rc, 1, index, nullptr);
}

namespace {
int test_some(const std::vector<Ours>& ours, int n, MPI_Request* reqs, int* outcount, int* indices,
              MPI_Status* statuses) {
  progress_all(ours);
  const int rc = PMPI_Testsome(n, reqs, outcount, indices, statuses);
  if (*outcount == MPI_UNDEFINED) return rc;
  return retire_indices(ours, rc, *outcount, indices, statuses);
}
}  // namespace

extern "C" int MPI_Testsome(int n, MPI_Request* reqs, int* outcount, int* indices, MPI_Status* statuses) {
  const std::vector<Ours> ours = ours_in(n, reqs);
  if (ours.empty()) return PMPI_Testsome(n, reqs, outcount, indices, statuses);
  return test_some(ours, n, reqs, outcount, indices, statuses);
}

extern "C" int MPI_Waitsome(int n, MPI_Request* reqs, int* outcount, int* indices, MPI_Status* statuses) {
  const std::vector<Ours> ours = ours_in(n, reqs);
  if (ours.empty()) return PMPI_Waitsome(n, reqs, outcount, indices, statuses);
  for (;;) {
    const int rc = test_some(ours, n, reqs, outcount, indices, statuses);
    if (rc != MPI_SUCCESS || *outcount != 0) return rc;
    sched_yield();
  }
}

extern "C" int MPI_Request_get_status(MPI_Request req, int* flag, MPI_Status* status) {
  if (Pending* p = find(req)) progress(p, 0);
  const int rc = PMPI_Request_get_status(req, flag, status);
  // A null request gets MPI's empty status, whose error is MPI_SUCCESS; Open MPI 4.1 leaves that
  // field as it was, and callers that read it saw our frames' leftovers (MPICH's rqstatus).
  if (rc == MPI_SUCCESS && req == MPI_REQUEST_NULL && status != MPI_STATUS_IGNORE) status->MPI_ERROR = MPI_SUCCESS;
  return rc;
}

extern "C" int MPI_Request_free(MPI_Request* req) {
  if (g_live.load(std::memory_order_acquire) == 0 || *req == MPI_REQUEST_NULL) return PMPI_Request_free(req);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_pending.find(*req);
    if (it != g_pending.end()) {
      // The call goes on; MPI frees the generalized request once it is completed (reap_orphans).
      if (!it->second->done) {
        g_orphans.push_back(std::move(it->second));
        g_orphaned.fetch_add(1, std::memory_order_release);
      }
      g_pending.erase(it);
      g_live.fetch_sub(1, std::memory_order_release);
    }
  }
  return PMPI_Request_free(req);
}

extern "C" int MPI_Cancel(MPI_Request* req) {
  if (find(*req)) return MPI_SUCCESS;  // collectives run to completion; MPI_Test_cancelled says 0
  return PMPI_Cancel(req);
}
