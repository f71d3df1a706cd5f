// Open MPI's Fortran bindings (mpif.h, `use mpi`) call PMPI_* themselves, past a C interposer, so
// the Open MPI interposer defines the Fortran entry points too, under each name a compiler may
// mangle them to.
#pragma once

#include "interpose.h"

#define CORAL_FORTRAN(lower, upper, params, body) \
  extern "C" void lower##_ params { body; }       \
  extern "C" void lower##__ params { body; }      \
  extern "C" void lower params { body; }          \
  extern "C" void upper params { body; }

// Open MPI's Fortran MPI_IN_PLACE, MPI_BOTTOM and MPI_STATUS(ES)_IGNORE are common blocks that
// libmpi defines: an argument is one of them when its address is theirs.
extern "C" int mpi_fortran_in_place_, mpi_fortran_bottom_;
extern "C" MPI_Fint mpi_fortran_status_ignore_[], mpi_fortran_statuses_ignore_[];

namespace coral_mpi::fortran {

inline void* buf(void* b) {
  if (b == &mpi_fortran_in_place_) return MPI_IN_PLACE;
  if (b == &mpi_fortran_bottom_) return MPI_BOTTOM;
  return b;
}
inline MPI_Comm comm(const MPI_Fint* c) { return PMPI_Comm_f2c(*c); }
inline MPI_Datatype type(const MPI_Fint* t) { return PMPI_Type_f2c(*t); }
inline MPI_Op op(const MPI_Fint* o) { return PMPI_Op_f2c(*o); }
// Runs a C call that makes a request and hands its Fortran handle back.
template <class F>
int with_request(MPI_Fint* freq, F&& f) {
  MPI_Request r = MPI_REQUEST_NULL;
  const int rc = f(&r);
  *freq = PMPI_Request_c2f(r);
  return rc;
}

}  // namespace coral_mpi::fortran
