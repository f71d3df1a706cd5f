// The Fortran collectives (see fortran.h).
#include "fortran.h"

using namespace coral_mpi;
using namespace coral_mpi::fortran;
using F = MPI_Fint;

CORAL_FORTRAN(mpi_allreduce, MPI_ALLREDUCE, (void* s, void* r, F* n, F* t, F* o, F* c, F* e),
              *e = allreduce(buf(s), buf(r), *n, type(t), op(o), comm(c), nullptr))
CORAL_FORTRAN(mpi_iallreduce, MPI_IALLREDUCE, (void* s, void* r, F* n, F* t, F* o, F* c, F* q, F* e),
              *e = with_request(q, [&](MPI_Request* x) {
                return allreduce(buf(s), buf(r), *n, type(t), op(o), comm(c), x);
              }))
CORAL_FORTRAN(mpi_reduce, MPI_REDUCE, (void* s, void* r, F* n, F* t, F* o, F* root, F* c, F* e),
              *e = reduce(buf(s), buf(r), *n, type(t), op(o), *root, comm(c), nullptr))
CORAL_FORTRAN(mpi_ireduce, MPI_IREDUCE, (void* s, void* r, F* n, F* t, F* o, F* root, F* c, F* q, F* e),
              *e = with_request(q, [&](MPI_Request* x) {
                return reduce(buf(s), buf(r), *n, type(t), op(o), *root, comm(c), x);
              }))
CORAL_FORTRAN(mpi_reduce_scatter_block, MPI_REDUCE_SCATTER_BLOCK, (void* s, void* r, F* n, F* t, F* o, F* c, F* e),
              *e = reduce_scatter_block(buf(s), buf(r), *n, type(t), op(o), comm(c), nullptr))
CORAL_FORTRAN(mpi_ireduce_scatter_block, MPI_IREDUCE_SCATTER_BLOCK,
              (void* s, void* r, F* n, F* t, F* o, F* c, F* q, F* e), *e = with_request(q, [&](MPI_Request* x) {
                return reduce_scatter_block(buf(s), buf(r), *n, type(t), op(o), comm(c), x);
              }))
CORAL_FORTRAN(mpi_reduce_scatter, MPI_REDUCE_SCATTER, (void* s, void* r, F* counts, F* t, F* o, F* c, F* e),
              *e = reduce_scatter(buf(s), buf(r), counts, type(t), op(o), comm(c), nullptr))
CORAL_FORTRAN(mpi_ireduce_scatter, MPI_IREDUCE_SCATTER, (void* s, void* r, F* counts, F* t, F* o, F* c, F* q, F* e),
              *e = with_request(q, [&](MPI_Request* x) {
                return reduce_scatter(buf(s), buf(r), counts, type(t), op(o), comm(c), x);
              }))
CORAL_FORTRAN(mpi_bcast, MPI_BCAST, (void* b, F* n, F* t, F* root, F* c, F* e),
              *e = bcast(buf(b), *n, type(t), *root, comm(c), nullptr))
CORAL_FORTRAN(mpi_ibcast, MPI_IBCAST, (void* b, F* n, F* t, F* root, F* c, F* q, F* e),
              *e = with_request(q, [&](MPI_Request* x) { return bcast(buf(b), *n, type(t), *root, comm(c), x); }))
CORAL_FORTRAN(mpi_allgather, MPI_ALLGATHER, (void* s, F* sn, F* st, void* r, F* rn, F* rt, F* c, F* e),
              *e = allgather(buf(s), *sn, type(st), buf(r), *rn, type(rt), comm(c), nullptr))
CORAL_FORTRAN(mpi_iallgather, MPI_IALLGATHER, (void* s, F* sn, F* st, void* r, F* rn, F* rt, F* c, F* q, F* e),
              *e = with_request(q, [&](MPI_Request* x) {
                return allgather(buf(s), *sn, type(st), buf(r), *rn, type(rt), comm(c), x);
              }))
CORAL_FORTRAN(mpi_allgatherv, MPI_ALLGATHERV, (void* s, F* sn, F* st, void* r, F* counts, F* displs, F* rt, F* c, F* e),
              *e = allgatherv(buf(s), *sn, type(st), buf(r), counts, displs, type(rt), comm(c), nullptr))
CORAL_FORTRAN(mpi_iallgatherv, MPI_IALLGATHERV,
              (void* s, F* sn, F* st, void* r, F* counts, F* displs, F* rt, F* c, F* q, F* e),
              *e = with_request(q, [&](MPI_Request* x) {
                return allgatherv(buf(s), *sn, type(st), buf(r), counts, displs, type(rt), comm(c), x);
              }))
CORAL_FORTRAN(mpi_alltoall, MPI_ALLTOALL, (void* s, F* sn, F* st, void* r, F* rn, F* rt, F* c, F* e),
              *e = alltoall(buf(s), *sn, type(st), buf(r), *rn, type(rt), comm(c), nullptr))
CORAL_FORTRAN(mpi_ialltoall, MPI_IALLTOALL, (void* s, F* sn, F* st, void* r, F* rn, F* rt, F* c, F* q, F* e),
              *e = with_request(q, [&](MPI_Request* x) {
                return alltoall(buf(s), *sn, type(st), buf(r), *rn, type(rt), comm(c), x);
              }))
CORAL_FORTRAN(mpi_alltoallv, MPI_ALLTOALLV, (void* s, F* sc, F* sd, F* st, void* r, F* rc, F* rd, F* rt, F* c, F* e),
              *e = alltoallv(buf(s), sc, sd, type(st), buf(r), rc, rd, type(rt), comm(c), nullptr))
CORAL_FORTRAN(mpi_ialltoallv, MPI_IALLTOALLV,
              (void* s, F* sc, F* sd, F* st, void* r, F* rc, F* rd, F* rt, F* c, F* q, F* e),
              *e = with_request(q, [&](MPI_Request* x) {
                return alltoallv(buf(s), sc, sd, type(st), buf(r), rc, rd, type(rt), comm(c), x);
              }))
CORAL_FORTRAN(mpi_gather, MPI_GATHER, (void* s, F* sn, F* st, void* r, F* rn, F* rt, F* root, F* c, F* e),
              *e = gather(buf(s), *sn, type(st), buf(r), *rn, type(rt), *root, comm(c), nullptr))
CORAL_FORTRAN(mpi_igather, MPI_IGATHER, (void* s, F* sn, F* st, void* r, F* rn, F* rt, F* root, F* c, F* q, F* e),
              *e = with_request(q, [&](MPI_Request* x) {
                return gather(buf(s), *sn, type(st), buf(r), *rn, type(rt), *root, comm(c), x);
              }))
CORAL_FORTRAN(mpi_scatter, MPI_SCATTER, (void* s, F* sn, F* st, void* r, F* rn, F* rt, F* root, F* c, F* e),
              *e = scatter(buf(s), *sn, type(st), buf(r), *rn, type(rt), *root, comm(c), nullptr))
CORAL_FORTRAN(mpi_iscatter, MPI_ISCATTER, (void* s, F* sn, F* st, void* r, F* rn, F* rt, F* root, F* c, F* q, F* e),
              *e = with_request(q, [&](MPI_Request* x) {
                return scatter(buf(s), *sn, type(st), buf(r), *rn, type(rt), *root, comm(c), x);
              }))
CORAL_FORTRAN(mpi_barrier, MPI_BARRIER, (F * c, F* e), *e = barrier(comm(c), nullptr))
CORAL_FORTRAN(mpi_ibarrier, MPI_IBARRIER, (F * c, F* q, F* e),
              *e = with_request(q, [&](MPI_Request* x) { return barrier(comm(c), x); }))
