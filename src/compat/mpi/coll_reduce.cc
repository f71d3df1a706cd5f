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

}  // namespace

int allreduce(const void* sb, void* rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm, MPI_Request* req) {
  Reduction r;
  Comm* c = Job::admit(kAllreduce, comm, map_reduction(t, op, n, &r));
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
  Comm* c = Job::admit(kReduce, comm, pre);
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
  Comm* c = Job::admit(kReduceScatterBlock, comm, map_reduction(t, op, n, &r));
  if (!c)
    return req ? PMPI_Ireduce_scatter_block(sb, rb, n, t, op, comm, req)
               : PMPI_Reduce_scatter_block(sb, rb, n, t, op, comm);
  Job job(c, req ? "MPI_Ireduce_scatter_block" : "MPI_Reduce_scatter_block", req);
  const size_t all = r.bytes * static_cast<size_t>(c->size);
  Reduction whole = r;
  whole.bytes = all;
  // In place, MPI's input fills the receive buffer and the result lands at its start. Coral's
  // in-place layout has rank j's block at j: reduce there, then move it to the front.
  const bool in_place = sb == MPI_IN_PLACE;
  const void* src = in_place ? rb : sb;
  const void* in = input(job, whole, src, (in_place && whole.normalize) ? rb : nullptr);
  std::byte* out =
      in_place ? static_cast<std::byte*>(const_cast<void*>(in)) + r.bytes * c->rank : static_cast<std::byte*>(rb);
  if (in_place && out != rb) job.then([=] { std::memmove(rb, out, r.bytes); });
  return job.run([&](coralRequest_t* q) {
    return q ? coralIReduceScatter(in, out, r.count, r.dtype, r.op, c->coral, q)
             : coralReduceScatter(in, out, r.count, r.dtype, r.op, c->coral, nullptr);
  });
}

int reduce_scatter(const void* sb, void* rb, const int* counts, MPI_Datatype t, MPI_Op op, MPI_Comm comm,
                   MPI_Request* req) {
  Reduction r;
  Reason pre = kArgs;
  int size = 0, rank = 0;
  long total = 0;
  if (counts && comm != MPI_COMM_NULL) {
    PMPI_Comm_size(comm, &size);
    PMPI_Comm_rank(comm, &rank);
    bool ok = true;
    for (int j = 0; j < size; ++j) ok &= counts[j] >= 0, total += counts[j];
    if (ok && total <= 0x7fffffff) pre = map_reduction(t, op, static_cast<int>(total), &r);
  }
  Comm* c = Job::admit(kReduceScatter, comm, pre);
  if (!c)
    return req ? PMPI_Ireduce_scatter(sb, rb, counts, t, op, comm, req)
               : PMPI_Reduce_scatter(sb, rb, counts, t, op, comm);
  Job job(c, req ? "MPI_Ireduce_scatter" : "MPI_Reduce_scatter", req);
  const size_t per = r.count / static_cast<size_t>(total ? total : 1);  // Coral elements per MPI element
  std::vector<size_t> ccounts(size);
  size_t mine_at = 0;  // bytes before this rank's block
  for (int j = 0; j < size; ++j) {
    ccounts[j] = static_cast<size_t>(counts[j]) * per;
    if (j < rank) mine_at += static_cast<size_t>(counts[j]) * r.elem;
  }
  const size_t mine = static_cast<size_t>(counts[rank]) * r.elem;
  const bool in_place = sb == MPI_IN_PLACE;
  const void* src = in_place ? rb : sb;
  const void* in = input(job, r, src, (in_place && r.normalize) ? rb : nullptr);
  // As for the block form: Coral's in-place layout, then the result moved to the front.
  std::byte* out = in_place ? static_cast<std::byte*>(const_cast<void*>(in)) + mine_at : static_cast<std::byte*>(rb);
  if (in_place && out != rb) job.then([=] { std::memmove(rb, out, mine); });
  return job.run([&, ccounts](coralRequest_t* q) {
    return q ? coralIReduceScatterv(in, out, ccounts.data(), r.dtype, r.op, c->coral, q)
             : coralReduceScatterv(in, out, ccounts.data(), r.dtype, r.op, c->coral, nullptr);
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
