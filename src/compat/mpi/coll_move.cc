// The calls that move data without reducing it. They go to Coral as bytes whatever the datatype:
// MPI lets ranks describe the same bytes with different types (a root's derived type, the
// others' MPI_DOUBLE), so a route chosen by type could differ between ranks and hang the job.
// Types that are not contiguous are packed and unpacked around the call.
#include <cstring>

#include "interpose.h"

namespace coral_mpi {

namespace {

bool valid_type(MPI_Datatype t) {
  Layout l;
  return layout_of(t, &l);
}

int comm_size(MPI_Comm comm) {
  int size = 0;
  if (comm != MPI_COMM_NULL) PMPI_Comm_size(comm, &size);
  return size;
}

Reason check_counts(MPI_Comm comm, const int* counts, const int* displs) {
  const int size = comm_size(comm);
  if (!counts || !displs || size == 0) return kArgs;
  for (int j = 0; j < size; ++j)
    if (counts[j] < 0) return kArgs;
  return kHandled;
}

Reason check_root(MPI_Comm comm, int root) {
  const int size = comm_size(comm);
  return (size == 0 || root < 0 || root >= size) ? kArgs : kHandled;
}

// Gather and scatter: the side every rank has (`all`: gather's send, scatter's receive), which
// the root may replace by MPI_IN_PLACE, and the root's own side.
Reason rooted(MPI_Comm comm, int root, bool* is_root, bool all_in_place, int all_n, MPI_Datatype all_t, int root_n,
              MPI_Datatype root_t) {
  Reason pre = check_root(comm, root);
  if (pre != kHandled) return pre;
  int rank = -1;
  PMPI_Comm_rank(comm, &rank);
  *is_root = rank == root;
  const bool in_place = *is_root && all_in_place;
  if ((!in_place && (all_n < 0 || !valid_type(all_t))) || (*is_root && (root_n < 0 || !valid_type(root_t))))
    return kArgs;
  return kHandled;
}

}  // namespace

int bcast(void* buf, int n, MPI_Datatype t, int root, MPI_Comm comm, MPI_Request* req) {
  Reason pre = (n < 0 || !valid_type(t)) ? kArgs : check_root(comm, root);
  Comm* c = Job::admit(kBcast, comm, pre, !req);
  if (!c) return req ? PMPI_Ibcast(buf, n, t, root, comm, req) : PMPI_Bcast(buf, n, t, root, comm);
  Job job(c, req ? "MPI_Ibcast" : "MPI_Bcast", req);
  const Bytes b = c->rank == root ? send_view(job, buf, n, t, comm) : recv_view(job, buf, n, t, comm);
  return job.run([&](coralRequest_t* q) {
    return q ? coralIBroadcast(b.ptr, b.ptr, b.total, coralUint8, root, c->coral, q)
             : coralBroadcast(b.ptr, b.ptr, b.total, coralUint8, root, c->coral, nullptr);
  });
}

int gather(const void* sb, int sn, MPI_Datatype st, void* rb, int rn, MPI_Datatype rt, int root, MPI_Comm comm,
           MPI_Request* req) {
  bool is_root = false;
  const Reason pre = rooted(comm, root, &is_root, sb == MPI_IN_PLACE, sn, st, rn, rt);
  const bool in_place = is_root && sb == MPI_IN_PLACE;
  Comm* c = Job::admit(kGather, comm, pre, !req);
  if (!c)
    return req ? PMPI_Igather(sb, sn, st, rb, rn, rt, root, comm, req)
               : PMPI_Gather(sb, sn, st, rb, rn, rt, root, comm);
  Job job(c, req ? "MPI_Igather" : "MPI_Gather", req);
  const std::byte* in = nullptr;
  std::byte* out = nullptr;
  size_t block = 0;
  if (is_root) {
    const Bytes r = recv_blocks(job, rb, c->size, rn, nullptr, nullptr, rt, comm);
    out = r.ptr;
    block = r.counts[root];
    if (!in_place) {
      in = send_view(job, sb, sn, st, comm).ptr;
    } else {
      in = r.ptr + r.displs[root];
      pack_block(r, root, rb, rn, static_cast<long>(root) * rn, rt, comm);
    }
  } else {
    const Bytes s = send_view(job, sb, sn, st, comm);
    in = s.ptr;
    block = s.total;
  }
  return job.run([&](coralRequest_t* q) {
    return q ? coralIGather(in, out, block, coralUint8, root, c->coral, q)
             : coralGather(in, out, block, coralUint8, root, c->coral, nullptr);
  });
}

int scatter(const void* sb, int sn, MPI_Datatype st, void* rb, int rn, MPI_Datatype rt, int root, MPI_Comm comm,
            MPI_Request* req) {
  bool is_root = false;
  const Reason pre = rooted(comm, root, &is_root, rb == MPI_IN_PLACE, rn, rt, sn, st);
  const bool in_place = is_root && rb == MPI_IN_PLACE;
  Comm* c = Job::admit(kScatter, comm, pre, !req);
  if (!c)
    return req ? PMPI_Iscatter(sb, sn, st, rb, rn, rt, root, comm, req)
               : PMPI_Scatter(sb, sn, st, rb, rn, rt, root, comm);
  Job job(c, req ? "MPI_Iscatter" : "MPI_Scatter", req);
  const std::byte* in = nullptr;
  std::byte* out = nullptr;
  size_t block = 0;
  if (is_root) {
    const Bytes s = send_blocks(job, sb, c->size, sn, nullptr, nullptr, st, comm);
    in = s.ptr;
    block = s.counts[root];
    // In place the root keeps its block where it is: Coral's in-place layout copies nothing.
    out = in_place ? const_cast<std::byte*>(in) + s.displs[root] : recv_view(job, rb, rn, rt, comm).ptr;
  } else {
    const Bytes r = recv_view(job, rb, rn, rt, comm);
    out = r.ptr;
    block = r.total;
  }
  return job.run([&](coralRequest_t* q) {
    return q ? coralIScatter(in, out, block, coralUint8, root, c->coral, q)
             : coralScatter(in, out, block, coralUint8, root, c->coral, nullptr);
  });
}

int allgather(const void* sb, int sn, MPI_Datatype st, void* rb, int rn, MPI_Datatype rt, MPI_Comm comm,
              MPI_Request* req) {
  const bool in_place = sb == MPI_IN_PLACE;
  Reason pre = (rn < 0 || !valid_type(rt) || (!in_place && (sn < 0 || !valid_type(st)))) ? kArgs : kHandled;
  Comm* c = Job::admit(kAllgather, comm, pre, !req);
  if (!c)
    return req ? PMPI_Iallgather(sb, sn, st, rb, rn, rt, comm, req) : PMPI_Allgather(sb, sn, st, rb, rn, rt, comm);
  Job job(c, req ? "MPI_Iallgather" : "MPI_Allgather", req);
  // In place: this rank's block is already in the receive buffer, as Coral's in-place layout.
  const Bytes r = recv_blocks(job, rb, c->size, rn, nullptr, nullptr, rt, comm);
  const std::byte* in = r.ptr + r.displs[c->rank];
  if (!in_place) {
    in = send_view(job, sb, sn, st, comm).ptr;
  } else {
    pack_block(r, c->rank, rb, rn, static_cast<long>(c->rank) * rn, rt, comm);
  }
  const size_t block = r.counts[0];
  std::byte* out = r.ptr;
  return job.run([&](coralRequest_t* q) {
    return q ? coralIAllGather(in, out, block, coralUint8, c->coral, q)
             : coralAllGather(in, out, block, coralUint8, c->coral, nullptr);
  });
}

int allgatherv(const void* sb, int sn, MPI_Datatype st, void* rb, const int* rcounts, const int* displs,
               MPI_Datatype rt, MPI_Comm comm, MPI_Request* req) {
  const bool in_place = sb == MPI_IN_PLACE;
  Reason pre =
      (!valid_type(rt) || (!in_place && (sn < 0 || !valid_type(st)))) ? kArgs : check_counts(comm, rcounts, displs);
  Comm* c = Job::admit(kAllgatherv, comm, pre, !req);
  if (!c)
    return req ? PMPI_Iallgatherv(sb, sn, st, rb, rcounts, displs, rt, comm, req)
               : PMPI_Allgatherv(sb, sn, st, rb, rcounts, displs, rt, comm);
  Job job(c, req ? "MPI_Iallgatherv" : "MPI_Allgatherv", req);
  const Bytes r = recv_blocks(job, rb, c->size, 0, rcounts, displs, rt, comm);
  const std::byte* in = r.ptr + r.displs[c->rank];
  if (!in_place) {
    in = send_view(job, sb, sn, st, comm).ptr;
  } else {
    pack_block(r, c->rank, rb, rcounts[c->rank], displs[c->rank], rt, comm);
  }
  std::byte* out = r.ptr;
  const size_t mine = r.counts[c->rank];
  return job.run([&](coralRequest_t* q) {
    return q ? coralIAllGatherv(in, mine, out, r.counts.data(), r.displs.data(), coralUint8, c->coral, q)
             : coralAllGatherv(in, mine, out, r.counts.data(), r.displs.data(), coralUint8, c->coral, nullptr);
  });
}

}  // namespace coral_mpi

using namespace coral_mpi;

extern "C" {
int MPI_Bcast(void* buf, int n, MPI_Datatype t, int root, MPI_Comm comm) {
  return bcast(buf, n, t, root, comm, nullptr);
}
int MPI_Ibcast(void* buf, int n, MPI_Datatype t, int root, MPI_Comm comm, MPI_Request* req) {
  return bcast(buf, n, t, root, comm, req);
}
int MPI_Gather(const void* sb, int sn, MPI_Datatype st, void* rb, int rn, MPI_Datatype rt, int root, MPI_Comm comm) {
  return gather(sb, sn, st, rb, rn, rt, root, comm, nullptr);
}
int MPI_Igather(const void* sb, int sn, MPI_Datatype st, void* rb, int rn, MPI_Datatype rt, int root, MPI_Comm comm,
                MPI_Request* req) {
  return gather(sb, sn, st, rb, rn, rt, root, comm, req);
}
int MPI_Scatter(const void* sb, int sn, MPI_Datatype st, void* rb, int rn, MPI_Datatype rt, int root, MPI_Comm comm) {
  return scatter(sb, sn, st, rb, rn, rt, root, comm, nullptr);
}
int MPI_Iscatter(const void* sb, int sn, MPI_Datatype st, void* rb, int rn, MPI_Datatype rt, int root, MPI_Comm comm,
                 MPI_Request* req) {
  return scatter(sb, sn, st, rb, rn, rt, root, comm, req);
}
int MPI_Allgather(const void* sb, int sn, MPI_Datatype st, void* rb, int rn, MPI_Datatype rt, MPI_Comm comm) {
  return allgather(sb, sn, st, rb, rn, rt, comm, nullptr);
}
int MPI_Iallgather(const void* sb, int sn, MPI_Datatype st, void* rb, int rn, MPI_Datatype rt, MPI_Comm comm,
                   MPI_Request* req) {
  return allgather(sb, sn, st, rb, rn, rt, comm, req);
}
int MPI_Allgatherv(const void* sb, int sn, MPI_Datatype st, void* rb, const int* rcounts, const int* displs,
                   MPI_Datatype rt, MPI_Comm comm) {
  return allgatherv(sb, sn, st, rb, rcounts, displs, rt, comm, nullptr);
}
int MPI_Iallgatherv(const void* sb, int sn, MPI_Datatype st, void* rb, const int* rcounts, const int* displs,
                    MPI_Datatype rt, MPI_Comm comm, MPI_Request* req) {
  return allgatherv(sb, sn, st, rb, rcounts, displs, rt, comm, req);
}
}
