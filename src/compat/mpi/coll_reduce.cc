// The reductions. MPI requires the same count, datatype and op on every rank, so deciding from
// them sends every rank the same way.
#include <cstring>

#include "interpose.h"

namespace coral_mpi {

namespace {

// The input a reduction reads: the send buffer, or for logical ops its 0/1 copy in `out` (the
// receive buffer where that is big enough, else a temporary).
const void* input(Job& job, const Reduction& r, const void* in, void* out) {
  // One rank: MPI applies no op, so its logical "reduction" hands the input back as it is.
  if (!r.normalize || job.comm()->size == 1) return in;
  void* dst = out ? out : job.temp(r.bytes);
  normalize(in, dst, r.bytes / static_cast<size_t>(r.elem), r.elem);
  return dst;
}

// An in-place reduce-scatter's input: a private copy of the receive buffer (0/1 for logical ops).
// Coral's in-place form uses the whole buffer as its work space, while MPI leaves all but the
// result's place as it was (Open MPI and MPICH do, and mpi4py's tests check it).
const void* in_place_input(Job& job, const Reduction& r, void* rb) {
  const void* in = input(job, r, rb, nullptr);
  if (in != rb) return in;
  std::byte* copy = job.temp(r.bytes);
  if (r.bytes) std::memcpy(copy, rb, r.bytes);  // rb may be null when empty (mpi4py passes it)
  return copy;
}

}  // namespace

int allreduce(const void* sb, void* rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm, MPI_Request* req) {
  Reduction r;
  Comm* c = Job::admit(kAllreduce, comm, map_reduction(t, op, n, &r), !req);
  if (!c) return req ? PMPI_Iallreduce(sb, rb, n, t, op, comm, req) : PMPI_Allreduce(sb, rb, n, t, op, comm);
  Job job(c, req ? "MPI_Iallreduce" : "MPI_Allreduce", req);
  const void* in = input(job, r, sb == MPI_IN_PLACE ? rb : sb, rb);
  return job.run([&](coralRequest_t* q) {
    return q ? coralIAllReduce(in, rb, r.count, r.dtype, r.op, c->coral, q)
             : coralAllReduce(in, rb, r.count, r.dtype, r.op, c->coral, nullptr);
  });
}

int reduce(const void* sb, void* rb, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm, MPI_Request* req) {
  Reduction r;
  Reason pre = map_reduction(t, op, n, &r);
  int size = 0;
  if (pre == kHandled && comm != MPI_COMM_NULL && (PMPI_Comm_size(comm, &size), root < 0 || root >= size)) pre = kArgs;
  Comm* c = Job::admit(kReduce, comm, pre, !req);
  if (!c) return req ? PMPI_Ireduce(sb, rb, n, t, op, root, comm, req) : PMPI_Reduce(sb, rb, n, t, op, root, comm);
  Job job(c, req ? "MPI_Ireduce" : "MPI_Reduce", req);
  const bool is_root = c->rank == root;
  const void* src = sb == MPI_IN_PLACE ? rb : sb;  // MPI_IN_PLACE is the root's alone
  const void* in = input(job, r, src, is_root ? rb : nullptr);
  void* out = is_root ? rb : nullptr;
  return job.run([&](coralRequest_t* q) {
    return q ? coralIReduce(in, out, r.count, r.dtype, r.op, root, c->coral, q)
             : coralReduce(in, out, r.count, r.dtype, r.op, root, c->coral, nullptr);
  });
}

int reduce_scatter_block(const void* sb, void* rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm, MPI_Request* req) {
  Reduction r;
  Comm* c = Job::admit(kReduceScatterBlock, comm, map_reduction(t, op, n, &r), !req);
  if (!c)
    return req ? PMPI_Ireduce_scatter_block(sb, rb, n, t, op, comm, req)
               : PMPI_Reduce_scatter_block(sb, rb, n, t, op, comm);
  Job job(c, req ? "MPI_Ireduce_scatter_block" : "MPI_Reduce_scatter_block", req);
  Reduction whole = r;
  whole.bytes = r.bytes * static_cast<size_t>(c->size);
  // In place, MPI's input fills the receive buffer and the result lands at its start.
  const void* in = sb == MPI_IN_PLACE ? in_place_input(job, whole, rb) : input(job, whole, sb, nullptr);
  return job.run([&](coralRequest_t* q) {
    return q ? coralIReduceScatter(in, rb, r.count, r.dtype, r.op, c->coral, q)
             : coralReduceScatter(in, rb, r.count, r.dtype, r.op, c->coral, nullptr);
  });
}

int reduce_scatter(const void* sb, void* rb, const int* counts, MPI_Datatype t, MPI_Op op, MPI_Comm comm,
                   MPI_Request* req) {
  Reduction r;
  Reason pre = kArgs;
  int size = 0;
  long total = 0;
  if (counts && comm != MPI_COMM_NULL) {
    PMPI_Comm_size(comm, &size);
    bool ok = true;
    for (int j = 0; j < size; ++j) ok &= counts[j] >= 0, total += counts[j];
    if (ok && total <= 0x7fffffff) pre = map_reduction(t, op, static_cast<int>(total), &r);
  }
  Comm* c = Job::admit(kReduceScatter, comm, pre, !req);
  if (!c)
    return req ? PMPI_Ireduce_scatter(sb, rb, counts, t, op, comm, req)
               : PMPI_Reduce_scatter(sb, rb, counts, t, op, comm);
  Job job(c, req ? "MPI_Ireduce_scatter" : "MPI_Reduce_scatter", req);
  const size_t per = r.count / static_cast<size_t>(total ? total : 1);  // Coral elements per MPI element
  std::vector<size_t> ccounts(size);
  for (int j = 0; j < size; ++j) ccounts[j] = static_cast<size_t>(counts[j]) * per;
  const void* in = sb == MPI_IN_PLACE ? in_place_input(job, r, rb) : input(job, r, sb, nullptr);
  return job.run([&, ccounts](coralRequest_t* q) {
    return q ? coralIReduceScatterv(in, rb, ccounts.data(), r.dtype, r.op, c->coral, q)
             : coralReduceScatterv(in, rb, ccounts.data(), r.dtype, r.op, c->coral, nullptr);
  });
}

}  // namespace coral_mpi

using namespace coral_mpi;

extern "C" {
int MPI_Allreduce(const void* sb, void* rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm) {
  return allreduce(sb, rb, n, t, op, comm, nullptr);
}
int MPI_Iallreduce(const void* sb, void* rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm, MPI_Request* req) {
  return allreduce(sb, rb, n, t, op, comm, req);
}
int MPI_Reduce(const void* sb, void* rb, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm) {
  return reduce(sb, rb, n, t, op, root, comm, nullptr);
}
int MPI_Ireduce(const void* sb, void* rb, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm, MPI_Request* req) {
  return reduce(sb, rb, n, t, op, root, comm, req);
}
int MPI_Reduce_scatter_block(const void* sb, void* rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm) {
  return reduce_scatter_block(sb, rb, n, t, op, comm, nullptr);
}
int MPI_Ireduce_scatter_block(const void* sb, void* rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm,
                              MPI_Request* req) {
  return reduce_scatter_block(sb, rb, n, t, op, comm, req);
}
int MPI_Reduce_scatter(const void* sb, void* rb, const int* counts, MPI_Datatype t, MPI_Op op, MPI_Comm comm) {
  return reduce_scatter(sb, rb, counts, t, op, comm, nullptr);
}
int MPI_Ireduce_scatter(const void* sb, void* rb, const int* counts, MPI_Datatype t, MPI_Op op, MPI_Comm comm,
                        MPI_Request* req) {
  return reduce_scatter(sb, rb, counts, t, op, comm, req);
}
}
