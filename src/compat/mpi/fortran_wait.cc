// The Fortran request calls, MPI_FINALIZE and MPI_ABORT (see fortran.h): handles and statuses converted,
// then the C entry points, which know Coral's requests.
#include <vector>

#include "fortran.h"

using F = MPI_Fint;

namespace {

constexpr int kStatusInts = sizeof(MPI_Status) / sizeof(MPI_Fint);  // Fortran's MPI_STATUS_SIZE

bool ignored(const F* s) { return s == mpi_fortran_status_ignore_ || s == mpi_fortran_statuses_ignore_; }

// Requests in, the C call, requests and statuses back out (freed ones become MPI_REQUEST_NULL).
template <class Call>
int on_array(int n, F* freqs, F* fstatuses, Call&& call) {
  std::vector<MPI_Request> reqs(n > 0 ? n : 0);
  for (int i = 0; i < n; ++i) reqs[i] = PMPI_Request_f2c(freqs[i]);
  std::vector<MPI_Status> st(ignored(fstatuses) ? 0 : reqs.size());
  const int rc = call(reqs.data(), st.empty() ? MPI_STATUSES_IGNORE : st.data());
  for (int i = 0; i < n; ++i) freqs[i] = PMPI_Request_c2f(reqs[i]);
  for (size_t i = 0; i < st.size(); ++i) PMPI_Status_c2f(&st[i], fstatuses + i * kStatusInts);
  return rc;
}

int one(F* freq, F* fstatus, int (*call)(MPI_Request*, MPI_Status*)) {
  MPI_Request r = PMPI_Request_f2c(*freq);
  MPI_Status s;
  const int rc = call(&r, ignored(fstatus) ? MPI_STATUS_IGNORE : &s);
  *freq = PMPI_Request_c2f(r);
  if (!ignored(fstatus)) PMPI_Status_c2f(&s, fstatus);
  return rc;
}

int test_one(F* freq, F* flag, F* fstatus) {
  MPI_Request r = PMPI_Request_f2c(*freq);
  MPI_Status s;
  int f = 0;
  const int rc = MPI_Test(&r, &f, ignored(fstatus) ? MPI_STATUS_IGNORE : &s);
  *freq = PMPI_Request_c2f(r);
  *flag = f;
  if (f && !ignored(fstatus)) PMPI_Status_c2f(&s, fstatus);
  return rc;
}

// Fortran counts indices from 1.
void to_fortran(int* idx, int count) {
  for (int i = 0; i < count; ++i)
    if (idx[i] != MPI_UNDEFINED) idx[i] += 1;
}

}  // namespace

CORAL_FORTRAN(mpi_wait, MPI_WAIT, (F * q, F* s, F* e), *e = one(q, s, MPI_Wait))
CORAL_FORTRAN(mpi_test, MPI_TEST, (F * q, F* flag, F* s, F* e), *e = test_one(q, flag, s))
CORAL_FORTRAN(mpi_waitall, MPI_WAITALL, (F * n, F* q, F* s, F* e),
              *e = on_array(*n, q, s, [&](MPI_Request* r, MPI_Status* st) { return MPI_Waitall(*n, r, st); }))
CORAL_FORTRAN(mpi_testall, MPI_TESTALL, (F * n, F* q, F* flag, F* s, F* e),
              *e = on_array(*n, q, s, [&](MPI_Request* r, MPI_Status* st) {
                int f = 0;
                const int rc = MPI_Testall(*n, r, &f, st);
                *flag = f;
                return rc;
              }))
CORAL_FORTRAN(mpi_waitany, MPI_WAITANY, (F * n, F* q, F* idx, F* s, F* e),
              *e = on_array(*n, q, mpi_fortran_statuses_ignore_, [&](MPI_Request* r, MPI_Status*) {
                MPI_Status st;
                const int rc = MPI_Waitany(*n, r, idx, ignored(s) ? MPI_STATUS_IGNORE : &st);
                if (!ignored(s) && *idx != MPI_UNDEFINED) PMPI_Status_c2f(&st, s);
                to_fortran(idx, 1);
                return rc;
              }))
CORAL_FORTRAN(mpi_testany, MPI_TESTANY, (F * n, F* q, F* idx, F* flag, F* s, F* e),
              *e = on_array(*n, q, mpi_fortran_statuses_ignore_, [&](MPI_Request* r, MPI_Status*) {
                MPI_Status st;
                int f = 0;
                const int rc = MPI_Testany(*n, r, idx, &f, ignored(s) ? MPI_STATUS_IGNORE : &st);
                *flag = f;
                if (f && !ignored(s) && *idx != MPI_UNDEFINED) PMPI_Status_c2f(&st, s);
                to_fortran(idx, 1);
                return rc;
              }))
CORAL_FORTRAN(mpi_waitsome, MPI_WAITSOME, (F * n, F* q, F* out, F* idx, F* s, F* e),
              *e = on_array(*n, q, s, [&](MPI_Request* r, MPI_Status* st) {
                const int rc = MPI_Waitsome(*n, r, out, idx, st);
                if (*out != MPI_UNDEFINED) to_fortran(idx, *out);
                return rc;
              }))
CORAL_FORTRAN(mpi_testsome, MPI_TESTSOME, (F * n, F* q, F* out, F* idx, F* s, F* e),
              *e = on_array(*n, q, s, [&](MPI_Request* r, MPI_Status* st) {
                const int rc = MPI_Testsome(*n, r, out, idx, st);
                if (*out != MPI_UNDEFINED) to_fortran(idx, *out);
                return rc;
              }))
CORAL_FORTRAN(mpi_request_free, MPI_REQUEST_FREE, (F * q, F* e), {
  MPI_Request r = PMPI_Request_f2c(*q);
  *e = MPI_Request_free(&r);
  *q = PMPI_Request_c2f(r);
})
CORAL_FORTRAN(mpi_request_get_status, MPI_REQUEST_GET_STATUS, (F * q, F* flag, F* s, F* e), {
  MPI_Status st;
  int f = 0;
  *e = MPI_Request_get_status(PMPI_Request_f2c(*q), &f, ignored(s) ? MPI_STATUS_IGNORE : &st);
  *flag = f;
  if (f && !ignored(s)) PMPI_Status_c2f(&st, s);
})
CORAL_FORTRAN(mpi_cancel, MPI_CANCEL, (F * q, F* e), {
  MPI_Request r = PMPI_Request_f2c(*q);
  *e = MPI_Cancel(&r);
})
CORAL_FORTRAN(mpi_finalize, MPI_FINALIZE, (F * e), *e = MPI_Finalize())
CORAL_FORTRAN(mpi_abort, MPI_ABORT, (F * c, F* code, F* e), *e = MPI_Abort(coral_mpi::fortran::comm(c), *code))
