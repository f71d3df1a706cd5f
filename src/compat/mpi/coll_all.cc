// All-to-all and the barrier (bytes, as coll_move.cc explains).
#include "interpose.h"

namespace coral_mpi {

namespace {

bool valid_type(MPI_Datatype t) {
  Layout l;
  return layout_of(t, &l);
}

Reason check_v(MPI_Comm comm, const int* counts, const int* displs) {
  int size = 0;
  if (comm == MPI_COMM_NULL || !counts || !displs) return kArgs;
  PMPI_Comm_size(comm, &size);
  for (int j = 0; j < size; ++j)
    if (counts[j] < 0) return kArgs;
  return kHandled;
}

// In place the input is the receive buffer itself; packed types need it packed first.
void pack_in_place(const Bytes& r, void* rb, int nblocks, int count, const int* counts, const int* displs,
                   MPI_Datatype rt, MPI_Comm comm) {
  for (int j = 0; j < nblocks; ++j)
    pack_block(r, j, rb, counts ? counts[j] : count, displs ? displs[j] : static_cast<long>(j) * count, rt, comm);
}

}  // namespace

int alltoall(const void* sb, int sn, MPI_Datatype st, void* rb, int rn, MPI_Datatype rt, MPI_Comm comm,
             MPI_Request* req) {
  const bool in_place = sb == MPI_IN_PLACE;
  Reason pre = (rn < 0 || !valid_type(rt) || (!in_place && (sn < 0 || !valid_type(st)))) ? kArgs : kHandled;
  Comm* c = Job::admit(kAlltoall, comm, pre, !req);
  if (!c) return req ? PMPI_Ialltoall(sb, sn, st, rb, rn, rt, comm, req) : PMPI_Alltoall(sb, sn, st, rb, rn, rt, comm);
  Job job(c, req ? "MPI_Ialltoall" : "MPI_Alltoall", req);
  const Bytes r = recv_blocks(job, rb, c->size, rn, nullptr, nullptr, rt, comm);
  const std::byte* in = r.ptr;
  if (in_place)
    pack_in_place(r, rb, c->size, rn, nullptr, nullptr, rt, comm);
  else
    in = send_blocks(job, sb, c->size, sn, nullptr, nullptr, st, comm).ptr;
  const size_t block = r.counts[0];
  return job.run([&](coralRequest_t* q) {
    return q ? coralIAllToAll(in, r.ptr, block, coralUint8, c->coral, q)
             : coralAllToAll(in, r.ptr, block, coralUint8, c->coral, nullptr);
  });
}

int alltoallv(const void* sb, const int* scounts, const int* sdispls, MPI_Datatype st, void* rb, const int* rcounts,
              const int* rdispls, MPI_Datatype rt, MPI_Comm comm, MPI_Request* req) {
  const bool in_place = sb == MPI_IN_PLACE;
  Reason pre = !valid_type(rt) ? kArgs : check_v(comm, rcounts, rdispls);
  if (pre == kHandled && !in_place) pre = !valid_type(st) ? kArgs : check_v(comm, scounts, sdispls);
  Comm* c = Job::admit(kAlltoallv, comm, pre, !req);
  if (!c)
    return req ? PMPI_Ialltoallv(sb, scounts, sdispls, st, rb, rcounts, rdispls, rt, comm, req)
               : PMPI_Alltoallv(sb, scounts, sdispls, st, rb, rcounts, rdispls, rt, comm);
  Job job(c, req ? "MPI_Ialltoallv" : "MPI_Alltoallv", req);
  const Bytes r = recv_blocks(job, rb, c->size, 0, rcounts, rdispls, rt, comm);
  Bytes s;
  if (in_place) {
    pack_in_place(r, rb, c->size, 0, rcounts, rdispls, rt, comm);
    s.ptr = r.ptr;
    s.counts = r.counts;
    s.displs = r.displs;
  } else {
    s = send_blocks(job, sb, c->size, 0, scounts, sdispls, st, comm);
  }
  return job.run([&](coralRequest_t* q) {
    return q ? coralIAllToAllv(s.ptr, s.counts.data(), s.displs.data(), r.ptr, r.counts.data(), r.displs.data(),
                               coralUint8, c->coral, q)
             : coralAllToAllv(s.ptr, s.counts.data(), s.displs.data(), r.ptr, r.counts.data(), r.displs.data(),
                              coralUint8, c->coral, nullptr);
  });
}

int barrier(MPI_Comm comm, MPI_Request* req) {
  Comm* c = Job::admit(kBarrier, comm, kHandled, !req);
  if (!c) return req ? PMPI_Ibarrier(comm, req) : PMPI_Barrier(comm);
  Job job(c, req ? "MPI_Ibarrier" : "MPI_Barrier", req);
  return job.run([&](coralRequest_t* q) { return q ? coralIBarrier(c->coral, q) : coralBarrier(c->coral); });
}

}  // namespace coral_mpi

using namespace coral_mpi;

extern "C" {
int MPI_Alltoall(const void* sb, int sn, MPI_Datatype st, void* rb, int rn, MPI_Datatype rt, MPI_Comm comm) {
  return alltoall(sb, sn, st, rb, rn, rt, comm, nullptr);
}
int MPI_Ialltoall(const void* sb, int sn, MPI_Datatype st, void* rb, int rn, MPI_Datatype rt, MPI_Comm comm,
                  MPI_Request* req) {
  return alltoall(sb, sn, st, rb, rn, rt, comm, req);
}
int MPI_Alltoallv(const void* sb, const int* scounts, const int* sdispls, MPI_Datatype st, void* rb, const int* rcounts,
                  const int* rdispls, MPI_Datatype rt, MPI_Comm comm) {
  return alltoallv(sb, scounts, sdispls, st, rb, rcounts, rdispls, rt, comm, nullptr);
}
int MPI_Ialltoallv(const void* sb, const int* scounts, const int* sdispls, MPI_Datatype st, void* rb,
                   const int* rcounts, const int* rdispls, MPI_Datatype rt, MPI_Comm comm, MPI_Request* req) {
  return alltoallv(sb, scounts, sdispls, st, rb, rcounts, rdispls, rt, comm, req);
}
int MPI_Barrier(MPI_Comm comm) { return barrier(comm, nullptr); }
int MPI_Ibarrier(MPI_Comm comm, MPI_Request* req) { return barrier(comm, req); }
}
