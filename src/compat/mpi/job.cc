// Running one call through Coral, and MPI buffers as bytes.
#include <atomic>
#include <cstring>

#include "interpose.h"

namespace coral_mpi {

Comm* Job::admit(Coll coll, MPI_Comm comm, Reason pre, bool blocking) {
  reap_orphans();
  Reason why = pre;
  Comm* c = nullptr;
  if (enabled(coll, &why) && pre == kHandled) c = comm_for(comm, blocking, &why);
  count(c ? kHandled : why);
  return c;
}

std::byte* Job::temp(size_t bytes) {
  temps_.push_back(std::make_unique<std::byte[]>(bytes ? bytes : 1));
  return temps_.back().get();
}

std::shared_ptr<MPI_Datatype> Job::hold(MPI_Datatype type) {
  if (!request_) return std::make_shared<MPI_Datatype>(type);
  MPI_Datatype dup = MPI_DATATYPE_NULL;
  PMPI_Type_dup(type, &dup);
  return {new MPI_Datatype(dup), [](MPI_Datatype* t) {
            PMPI_Type_free(t);
            delete t;
          }};
}

namespace {

std::atomic<bool> g_mpi_open{true};  // false from MPI_Finalize on: no MPI call is allowed then

// MPI's progress rule lets a peer need this rank's MPI progress (to finish a rendezvous send this
// rank posted, say) before that peer reaches the collective this rank blocks in; Coral calls this
// between the sleep slices of such a wait. A probe that finds nothing drives progress in both
// Open MPI and MPICH. One that finds a message returns at once without driving anything, so it
// asks for a tag programs hardly use: the largest. (A probe on a private copy of MPI_COMM_SELF
// finds nothing either, but MPICH serves that without driving progress.)
void drive_mpi(void*) {
  if (!g_mpi_open.load(std::memory_order_relaxed)) return;
  static const int tag = [] {
    int* ub = nullptr;
    int flag = 0;
    PMPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    return flag && ub ? *ub : 32767;  // 32767: the least MPI_TAG_UB the standard allows
  }();
  int flag = 0;
  PMPI_Iprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
}

// Once per thread, not around each call: setting it costs an 8-byte all-reduce ~2.5%.
void drive_mpi_while_blocked() {
  static thread_local bool hooked = false;
  if (hooked) return;
  coralSetWaitHook(drive_mpi, nullptr);
  hooked = true;
}

}  // namespace

void stop_driving_mpi() { g_mpi_open.store(false); }

int Job::run_with(void* issue, coralResult_t (*call)(void*, coralRequest_t*)) {
  if (!request_) {
    drive_mpi_while_blocked();
    const coralResult_t r = call(issue, nullptr);
    if (r != coralSuccess) return fail(comm_->mpi, call_, r, last_error(comm_));
    for (auto& f : finish_) f();
    return MPI_SUCCESS;
  }
  auto p = std::make_unique<Pending>();
  const coralResult_t r = call(issue, &p->creq);
  if (r != coralSuccess) {
    *request_ = MPI_REQUEST_NULL;
    return fail(comm_->mpi, call_, r, last_error(comm_));
  }
  p->mpi = comm_->mpi;
  p->owner = comm_;
  p->call = call_;
  p->temps = std::move(temps_);
  p->finish = std::move(finish_);
  return start_request(std::move(p), request_);
}

namespace {

Layout need_layout(MPI_Datatype type) {
  Layout l;
  layout_of(type, &l);  // the callers checked the type already
  return l;
}

}  // namespace

Bytes send_view(Job& job, const void* buf, int count, MPI_Datatype type, MPI_Comm comm) {
  const Layout l = need_layout(type);
  Bytes b;
  b.total = static_cast<size_t>(count) * static_cast<size_t>(l.size);
  if (l.contiguous) {
    b.ptr = static_cast<std::byte*>(const_cast<void*>(buf)) + l.lb;
    return b;
  }
  b.ptr = job.temp(b.total);
  int pos = 0;
  PMPI_Pack(buf, count, type, b.ptr, static_cast<int>(b.total), &pos, comm);
  return b;
}

Bytes recv_view(Job& job, void* buf, int count, MPI_Datatype type, MPI_Comm comm) {
  const Layout l = need_layout(type);
  Bytes b;
  b.total = static_cast<size_t>(count) * static_cast<size_t>(l.size);
  if (l.contiguous) {
    b.ptr = static_cast<std::byte*>(buf) + l.lb;
    return b;
  }
  std::byte* tmp = b.ptr = job.temp(b.total);
  const size_t total = b.total;
  job.then([=, held = job.hold(type)] {
    int pos = 0;
    PMPI_Unpack(tmp, static_cast<int>(total), &pos, buf, count, *held, comm);
  });
  return b;
}

namespace {

// Block j's element count and displacement (in extents), for uniform and v-forms alike.
struct BlockShape {
  int count;
  const int* counts;
  const int* displs;
  int n(int j) const { return counts ? counts[j] : count; }
  long d(int j) const { return displs ? displs[j] : static_cast<long>(j) * count; }
};

Bytes block_view(Job& job, std::byte* buf, int nblocks, const BlockShape& s, MPI_Datatype type, MPI_Comm comm,
                 bool receive) {
  const Layout l = need_layout(type);
  Bytes b;
  b.counts.resize(nblocks);
  b.displs.resize(nblocks);
  for (int j = 0; j < nblocks; ++j) b.counts[j] = static_cast<size_t>(s.n(j)) * static_cast<size_t>(l.size);
  if (l.contiguous) {
    b.ptr = buf + l.lb;
    for (int j = 0; j < nblocks; ++j) {
      b.displs[j] = static_cast<size_t>(s.d(j) * l.extent);
      b.total = std::max(b.total, b.displs[j] + b.counts[j]);
    }
    return b;
  }
  for (int j = 0; j < nblocks; ++j) {  // packed back to back
    b.displs[j] = b.total;
    b.total += b.counts[j];
  }
  std::byte* tmp = b.ptr = job.temp(b.total);
  auto each = [=](bool pack, MPI_Datatype t) {
    for (int j = 0; j < nblocks; ++j) {
      std::byte* at = buf + s.d(j) * l.extent;
      int pos = static_cast<int>(b.displs[j]);
      if (pack)
        PMPI_Pack(at, s.n(j), t, tmp, static_cast<int>(b.total), &pos, comm);
      else
        PMPI_Unpack(tmp, static_cast<int>(b.total), &pos, at, s.n(j), t, comm);
    }
  };
  if (receive)
    job.then([=, held = job.hold(type)] { each(false, *held); });
  else
    each(true, type);
  return b;
}

}  // namespace

Bytes send_blocks(Job& job, const void* buf, int nblocks, int count, const int* counts, const int* displs,
                  MPI_Datatype type, MPI_Comm comm) {
  return block_view(job, static_cast<std::byte*>(const_cast<void*>(buf)), nblocks, BlockShape{count, counts, displs},
                    type, comm, false);
}

Bytes recv_blocks(Job& job, void* buf, int nblocks, int count, const int* counts, const int* displs, MPI_Datatype type,
                  MPI_Comm comm) {
  return block_view(job, static_cast<std::byte*>(buf), nblocks, BlockShape{count, counts, displs}, type, comm, true);
}

void pack_block(const Bytes& view, int j, const void* buf, int count, long displ, MPI_Datatype type, MPI_Comm comm) {
  const Layout l = need_layout(type);
  if (l.contiguous) return;
  int pos = static_cast<int>(view.displs[j]);
  PMPI_Pack(static_cast<const std::byte*>(buf) + displ * l.extent, count, type, view.ptr, static_cast<int>(view.total),
            &pos, comm);
}

}  // namespace coral_mpi
