! The interposer under a Fortran program of the older kind: `include 'mpif.h'`, no module, so no
! interface checks and Fortran's MPI_IN_PLACE as mpif.h declares it. A few calls of each family,
! each result compared exactly with the one computed here; rank 0 prints
! `fortran-mpif: P=<n> failures=<F>` (the tally travels by MPI_SEND/MPI_RECV).
program coral_fortran_mpif
  implicit none
  include 'mpif.h'
  integer :: ierr, rank, np, nfail, i, r, req, total, x
  integer :: s(100), d(100), want(100), g(400)
  double precision :: v(10), vwant(10)
  logical :: done

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)
  nfail = 0

  s = [(rank * 3 + i, i = 1, 100)]
  want = 0
  do r = 0, np - 1
    want = want + [(r * 3 + i, i = 1, 100)]
  end do
  call MPI_ALLREDUCE(s, d, 100, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS .or. any(d /= want)) call fail('allreduce integer sum')
  d = s
  call MPI_ALLREDUCE(MPI_IN_PLACE, d, 100, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD, ierr)
  if (any(d /= [(i, i = 1, 100)])) call fail('allreduce integer min, MPI_IN_PLACE')

  v = [(dble(rank) + 0.5d0 * i, i = 1, 10)]
  vwant = [(dble(np - 1) + 0.5d0 * i, i = 1, 10)]
  call MPI_IALLREDUCE(MPI_IN_PLACE, v, 10, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, req, ierr)
  done = .false.
  do while (.not. done)
    call MPI_TEST(req, done, MPI_STATUS_IGNORE, ierr)
  end do
  if (any(v /= vwant)) call fail('iallreduce double precision max, MPI_IN_PLACE')

  if (rank /= 0) s = -1
  call MPI_BCAST(s, 100, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (any(s /= [(i, i = 1, 100)])) call fail('bcast integer')

  s(1:4) = [(rank * 10 + i, i = 1, 4)]
  call MPI_ALLGATHER(s, 4, MPI_INTEGER, g, 4, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  do r = 0, np - 1
    if (any(g(r * 4 + 1:r * 4 + 4) /= [(r * 10 + i, i = 1, 4)])) call fail('allgather integer')
  end do
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS) call fail('barrier')

  total = nfail
  if (rank == 0) then
    do r = 1, np - 1
      call MPI_RECV(x, 1, MPI_INTEGER, r, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      total = total + x
    end do
    write (*, '(a,i0,a,i0)') 'fortran-mpif: P=', np, ' failures=', total
  else
    call MPI_SEND(nfail, 1, MPI_INTEGER, 0, 99, MPI_COMM_WORLD, ierr)
  end if
  call MPI_FINALIZE(ierr)
  if (total /= 0) stop 1

contains

  subroutine fail(what)
    character(len=*), intent(in) :: what
    nfail = nfail + 1
    write (*, '(a,i0,2a)') 'fortran-mpif: rank ', rank, ': FAILED ', what
  end subroutine
end program
