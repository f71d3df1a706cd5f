! The interposer under a Fortran program that uses the `mpi` module: every collective it handles,
! in and out of place, on INTEGER, INTEGER*8, REAL, DOUBLE PRECISION and LOGICAL data, each result
! compared exactly with the one computed here from the inputs every rank is known to give.
! Builds with mpifort.openmpi and mpifort.mpich; rank 0 prints `fortran: P=<n> failures=<F>` and
! every rank stops with status 1 when anything failed. The failure count travels by MPI_SEND and
! MPI_RECV, so the tally never depends on the collectives under test.
program coral_fortran
  use mpi
  implicit none
  integer :: ierr, rank, np, nfail

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)
  nfail = 0

  call t_allreduce_int(7)
  call t_allreduce_int(70001)      ! past one 256 KiB chunk
  call t_allreduce_int(0)
  call t_allreduce_real_double(1000)
  call t_allreduce_logical(33)
  call t_allreduce_int8(129)
  call t_allreduce_maxloc()
  call t_allreduce_split()
  call t_reduce(100)
  call t_bcast(1000)
  call t_allgather(3)
  call t_alltoall(2)
  call t_reduce_scatter_block(3)
  call t_gather_scatter(2)
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  call expect(ierr == MPI_SUCCESS, 'barrier')
  call t_iallreduce_wait(1000)
  call t_ibcast_waitall(50)
  call t_vcolls()
  call t_nonblocking(3)

  call finish()

contains

  ! The inputs: what rank r puts at index i.
  pure integer function ival(r, i)
    integer, intent(in) :: r, i
    ival = r * 7 + i
  end function
  pure double precision function dval(r, i)
    integer, intent(in) :: r, i
    dval = dble(r) * 0.25d0 + dble(mod(i, 97)) - 3d0
  end function
  pure real function rval(r, i)
    integer, intent(in) :: r, i
    rval = real(r + mod(i, 13)) * 0.5
  end function
  pure logical function lval(r, i)
    integer, intent(in) :: r, i
    lval = mod(r + i, 3) /= 0 .or. mod(i, 5) == 0
  end function
  pure integer(kind=8) function kval(r, i)
    integer, intent(in) :: r, i
    kval = int(r + 1, 8) * 2_8**33 + int(i, 8)
  end function

  subroutine expect(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      nfail = nfail + 1
      write (*, '(a,i0,2a)') 'fortran: rank ', rank, ': FAILED ', what
    end if
  end subroutine

  subroutine t_allreduce_int(n)
    integer, intent(in) :: n
    integer, allocatable :: s(:), d(:), want(:)
    integer :: i, r
    allocate (s(n), d(n), want(n))
    s = [(ival(rank, i), i = 1, n)]
    want = 0
    do r = 0, np - 1
      want = want + [(ival(r, i), i = 1, n)]
    end do
    d = -1
    call MPI_ALLREDUCE(s, d, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    call expect(ierr == MPI_SUCCESS .and. all(d == want), 'allreduce integer sum')
    call expect(all(s == [(ival(rank, i), i = 1, n)]), 'allreduce left the send buffer alone')
    d = s
    call MPI_ALLREDUCE(MPI_IN_PLACE, d, n, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
    call expect(ierr == MPI_SUCCESS .and. all(d == [(ival(np - 1, i), i = 1, n)]), &
                'allreduce integer max, MPI_IN_PLACE')
  end subroutine

  subroutine t_allreduce_real_double(n)
    integer, intent(in) :: n
    double precision, allocatable :: ds(:), dd(:), dwant(:)
    real, allocatable :: rs(:), rd(:), rwant(:)
    integer :: i, r
    allocate (ds(n), dd(n), dwant(n), rs(n), rd(n), rwant(n))
    ds = [(dval(rank, i), i = 1, n)]
    rs = [(rval(rank, i), i = 1, n)]
    dwant = 0d0
    rwant = 0.0
    do r = 0, np - 1
      dwant = dwant + [(dval(r, i), i = 1, n)]
      rwant = max(rwant, [(rval(r, i), i = 1, n)])
    end do
    call MPI_ALLREDUCE(ds, dd, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    call expect(ierr == MPI_SUCCESS .and. all(dd == dwant), 'allreduce double precision sum')
    dd = ds
    call MPI_ALLREDUCE(MPI_IN_PLACE, dd, n, MPI_DOUBLE_PRECISION, MPI_MIN, MPI_COMM_WORLD, ierr)
    call expect(all(dd == [(dval(0, i), i = 1, n)]), 'allreduce double precision min, MPI_IN_PLACE')
    call MPI_ALLREDUCE(rs, rd, n, MPI_REAL, MPI_MAX, MPI_COMM_WORLD, ierr)
    call expect(ierr == MPI_SUCCESS .and. all(rd == rwant), 'allreduce real max')
    rwant = 0.0
    do r = 0, np - 1
      rwant = rwant + [(rval(r, i), i = 1, n)]
    end do
    rd = rs
    call MPI_ALLREDUCE(MPI_IN_PLACE, rd, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
    call expect(all(rd == rwant), 'allreduce real sum, MPI_IN_PLACE')
  end subroutine

  subroutine t_allreduce_logical(n)
    integer, intent(in) :: n
    logical, allocatable :: s(:), d(:), wand(:), wor(:)
    integer :: i, r
    allocate (s(n), d(n), wand(n), wor(n))
    s = [(lval(rank, i), i = 1, n)]
    wand = .true.
    wor = .false.
    do r = 0, np - 1
      wand = wand .and. [(lval(r, i), i = 1, n)]
      wor = wor .or. [(lval(r, i), i = 1, n)]
    end do
    call MPI_ALLREDUCE(s, d, n, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
    call expect(ierr == MPI_SUCCESS .and. all(d .eqv. wand), 'allreduce logical land')
    call MPI_ALLREDUCE(s, d, n, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD, ierr)
    call expect(ierr == MPI_SUCCESS .and. all(d .eqv. wor), 'allreduce logical lor')
    d = s
    call MPI_ALLREDUCE(MPI_IN_PLACE, d, n, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
    call expect(all(d .eqv. wand), 'allreduce logical land, MPI_IN_PLACE')
  end subroutine

  subroutine t_allreduce_int8(n)
    integer, intent(in) :: n
    integer(kind=8), allocatable :: s(:), d(:), want(:)
    integer :: i, r
    allocate (s(n), d(n), want(n))
    s = [(kval(rank, i), i = 1, n)]
    want = 0
    do r = 0, np - 1
      want = want + [(kval(r, i), i = 1, n)]
    end do
    call MPI_ALLREDUCE(s, d, n, MPI_INTEGER8, MPI_SUM, MPI_COMM_WORLD, ierr)
    call expect(ierr == MPI_SUCCESS .and. all(d == want), 'allreduce integer*8 sum')
    d = s
    call MPI_ALLREDUCE(MPI_IN_PLACE, d, n, MPI_INTEGER8, MPI_MAX, MPI_COMM_WORLD, ierr)
    call expect(all(d == [(kval(np - 1, i), i = 1, n)]), 'allreduce integer*8 max, MPI_IN_PLACE')
  end subroutine

  ! A pair type MPI reduces itself (the interposer is expected to pass it on).
  subroutine t_allreduce_maxloc()
    integer :: s(2, 3), d(2, 3), k
    do k = 1, 3
      s(1, k) = mod(rank + k, np) * 10
      s(2, k) = rank
    end do
    call MPI_ALLREDUCE(s, d, 3, MPI_2INTEGER, MPI_MAXLOC, MPI_COMM_WORLD, ierr)
    do k = 1, 3
      ! the largest value, (np-1)*10, sits on the rank with mod(rank + k, np) == np - 1
      call expect(d(1, k) == (np - 1) * 10 .and. d(2, k) == modulo(np - 1 - k, np), &
                  'allreduce MPI_2INTEGER maxloc')
    end do
  end subroutine

  ! A communicator of its own: even and odd ranks.
  subroutine t_allreduce_split()
    integer :: sub, subsize, x, want, r
    call MPI_COMM_SPLIT(MPI_COMM_WORLD, mod(rank, 2), rank, sub, ierr)
    call MPI_COMM_SIZE(sub, subsize, ierr)
    x = rank + 1
    call MPI_ALLREDUCE(MPI_IN_PLACE, x, 1, MPI_INTEGER, MPI_SUM, sub, ierr)
    want = 0
    do r = mod(rank, 2), np - 1, 2
      want = want + r + 1
    end do
    call expect(ierr == MPI_SUCCESS .and. x == want, 'allreduce on a split communicator')
    call MPI_COMM_FREE(sub, ierr)
  end subroutine

  subroutine t_reduce(n)
    integer, intent(in) :: n
    integer :: s(n), d(n), want(n), i, r, root
    double precision :: x(n), y(n), xwant(n)
    root = np - 1
    s = [(ival(rank, i), i = 1, n)]
    want = 0
    xwant = 0d0
    do r = 0, np - 1
      want = want + [(ival(r, i), i = 1, n)]
      xwant = xwant + [(dval(r, i), i = 1, n)]
    end do
    d = -5
    call MPI_REDUCE(s, d, n, MPI_INTEGER, MPI_SUM, root, MPI_COMM_WORLD, ierr)
    if (rank == root) then
      call expect(ierr == MPI_SUCCESS .and. all(d == want), 'reduce integer sum to the last rank')
    else
      call expect(ierr == MPI_SUCCESS .and. all(d == -5), 'reduce left a non-root receive buffer alone')
    end if
    ! in place at the root (rank 0); the others' receive buffer is not significant
    x = [(dval(rank, i), i = 1, n)]
    if (rank == 0) then
      call MPI_REDUCE(MPI_IN_PLACE, x, n, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
      call expect(all(x == xwant), 'reduce double precision sum, MPI_IN_PLACE at the root')
    else
      call MPI_REDUCE(x, y, n, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
      call expect(all(x == [(dval(rank, i), i = 1, n)]), 'reduce left the send buffer alone')
    end if
  end subroutine

  subroutine t_bcast(n)
    integer, intent(in) :: n
    double precision :: x(n)
    integer(kind=8) :: k(5)
    logical :: l(4)
    integer :: i, root
    root = mod(1, np)
    if (rank == root) then
      x = [(dval(root, i), i = 1, n)]
      k = [(kval(root, i), i = 1, 5)]
      l = [.true., .false., .false., .true.]
    else
      x = -1d0
      k = -1
      l = .false.
    end if
    call MPI_BCAST(x, n, MPI_DOUBLE_PRECISION, root, MPI_COMM_WORLD, ierr)
    call expect(ierr == MPI_SUCCESS .and. all(x == [(dval(root, i), i = 1, n)]), &
                'bcast double precision')
    call MPI_BCAST(k, 5, MPI_INTEGER8, root, MPI_COMM_WORLD, ierr)
    call expect(all(k == [(kval(root, i), i = 1, 5)]), 'bcast integer*8')
    call MPI_BCAST(l, 4, MPI_LOGICAL, root, MPI_COMM_WORLD, ierr)
    call expect(all(l .eqv. [.true., .false., .false., .true.]), 'bcast logical')
  end subroutine

  subroutine t_allgather(m)
    integer, intent(in) :: m
    integer :: s(m), d(m * np), want(m * np), r, k
    do r = 0, np - 1
      do k = 1, m
        want(r * m + k) = ival(r, k)
      end do
    end do
    s = [(ival(rank, k), k = 1, m)]
    d = -1
    call MPI_ALLGATHER(s, m, MPI_INTEGER, d, m, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    call expect(ierr == MPI_SUCCESS .and. all(d == want), 'allgather integer')
    d = -1
    d(rank * m + 1:rank * m + m) = s
    call MPI_ALLGATHER(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, d, m, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    call expect(ierr == MPI_SUCCESS .and. all(d == want), 'allgather integer, MPI_IN_PLACE')
  end subroutine

  subroutine t_alltoall(m)
    integer, intent(in) :: m
    double precision :: s(m * np), d(m * np), want(m * np)
    integer :: j, k
    do j = 0, np - 1
      do k = 1, m
        s(j * m + k) = dble(rank * 1000 + j * 10 + k)        ! block j goes to rank j
        want(j * m + k) = dble(j * 1000 + rank * 10 + k)     ! block j came from rank j
      end do
    end do
    d = -1d0
    call MPI_ALLTOALL(s, m, MPI_DOUBLE_PRECISION, d, m, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
    call expect(ierr == MPI_SUCCESS .and. all(d == want), 'alltoall double precision')
  end subroutine

  subroutine t_reduce_scatter_block(m)
    integer, intent(in) :: m
    integer :: s(m * np), d(m), want(m), i, r, k
    real :: rs(m * np), rwant(m)
    s = [(ival(rank, i), i = 1, m * np)]
    rs = [(rval(rank, i), i = 1, m * np)]
    want = 0
    rwant = 0.0
    do r = 0, np - 1
      do k = 1, m
        want(k) = want(k) + ival(r, rank * m + k)
        rwant(k) = rwant(k) + rval(r, rank * m + k)
      end do
    end do
    d = -1
    call MPI_REDUCE_SCATTER_BLOCK(s, d, m, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    call expect(ierr == MPI_SUCCESS .and. all(d == want), 'reduce_scatter_block integer sum')
    call MPI_REDUCE_SCATTER_BLOCK(MPI_IN_PLACE, rs, m, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
    call expect(ierr == MPI_SUCCESS .and. all(rs(1:m) == rwant), &
                'reduce_scatter_block real sum, MPI_IN_PLACE')
  end subroutine

  subroutine t_gather_scatter(m)
    integer, intent(in) :: m
    integer :: s(m), g(m * np), want(m * np), sc(m * np), got(m), r, k, root
    s = [(ival(rank, k), k = 1, m)]
    do r = 0, np - 1
      do k = 1, m
        want(r * m + k) = ival(r, k)
      end do
    end do
    g = -1
    call MPI_GATHER(s, m, MPI_INTEGER, g, m, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    if (rank == 0) then
      call expect(ierr == MPI_SUCCESS .and. all(g == want), 'gather integer to rank 0')
    else
      call expect(ierr == MPI_SUCCESS .and. all(g == -1), 'gather left a non-root buffer alone')
    end if
    ! in place at the root
    if (rank == 0) then
      g = -1
      g(1:m) = s
      call MPI_GATHER(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, g, m, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
      call expect(all(g == want), 'gather integer, MPI_IN_PLACE at the root')
    else
      call MPI_GATHER(s, m, MPI_INTEGER, g, m, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    end if
    root = np - 1
    do r = 0, np - 1
      do k = 1, m
        sc(r * m + k) = 500 + r * 10 + k
      end do
    end do
    if (rank /= root) sc = -3
    got = -1
    call MPI_SCATTER(sc, m, MPI_INTEGER, got, m, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    call expect(ierr == MPI_SUCCESS .and. all(got == [(500 + rank * 10 + k, k = 1, m)]), &
                'scatter integer from the last rank')
  end subroutine

  subroutine t_iallreduce_wait(n)
    integer, intent(in) :: n
    double precision :: s(n), d(n), want(n)
    integer :: req, status(MPI_STATUS_SIZE), i, r
    s = [(dval(rank, i), i = 1, n)]
    want = 0d0
    do r = 0, np - 1
      want = want + [(dval(r, i), i = 1, n)]
    end do
    call MPI_IALLREDUCE(s, d, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, req, ierr)
    call expect(ierr == MPI_SUCCESS, 'iallreduce started')
    call MPI_WAIT(req, status, ierr)
    call expect(ierr == MPI_SUCCESS .and. req == MPI_REQUEST_NULL, 'wait on iallreduce')
    call expect(all(d == want), 'iallreduce double precision sum')
    d = s
    call MPI_IALLREDUCE(MPI_IN_PLACE, d, n, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, req, ierr)
    call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
    call expect(all(d == [(dval(np - 1, i), i = 1, n)]), 'iallreduce double precision max, MPI_IN_PLACE')
  end subroutine

  ! A collective request and point-to-point ones completed by one MPI_WAITALL.
  subroutine t_ibcast_waitall(n)
    integer, intent(in) :: n
    integer(kind=8) :: b(n)
    integer :: out(n), in(n), reqs(3), statuses(MPI_STATUS_SIZE, 3), i, left, right
    right = mod(rank + 1, np)
    left = mod(rank - 1 + np, np)
    if (rank == 0) then
      b = [(kval(0, i), i = 1, n)]
    else
      b = 0
    end if
    out = [(ival(rank, i), i = 1, n)]
    in = -1
    call MPI_IRECV(in, n, MPI_INTEGER, left, 7, MPI_COMM_WORLD, reqs(1), ierr)
    call MPI_IBCAST(b, n, MPI_INTEGER8, 0, MPI_COMM_WORLD, reqs(2), ierr)
    call MPI_ISEND(out, n, MPI_INTEGER, right, 7, MPI_COMM_WORLD, reqs(3), ierr)
    call MPI_WAITALL(3, reqs, statuses, ierr)
    call expect(ierr == MPI_SUCCESS .and. all(reqs == MPI_REQUEST_NULL), 'waitall on ibcast + isend/irecv')
    call expect(all(b == [(kval(0, i), i = 1, n)]), 'ibcast integer*8')
    call expect(all(in == [(ival(left, i), i = 1, n)]), 'irecv beside an ibcast')
    call expect(statuses(MPI_SOURCE, 1) == left .and. statuses(MPI_TAG, 1) == 7, 'irecv status')
  end subroutine

  ! The v-forms: rank r contributes r + 1 elements (a count of 0 would hide nothing here).
  subroutine t_vcolls()
    integer :: counts(np), displs(np), total, r, k, j
    integer :: mine(np), gathered(np * (np + 1) / 2), want(np * (np + 1) / 2)
    integer :: scounts(np), sdispls(np), rcounts(np), rdispls(np)
    integer, allocatable :: sbuf(:), rbuf(:), rwant(:), rs(:), rsd(:), rswant(:)
    total = 0
    do r = 0, np - 1
      counts(r + 1) = r + 1
      displs(r + 1) = total
      total = total + r + 1
    end do
    mine(1:rank + 1) = [(ival(rank, k), k = 1, rank + 1)]
    do r = 0, np - 1
      want(displs(r + 1) + 1:displs(r + 1) + r + 1) = [(ival(r, k), k = 1, r + 1)]
    end do
    gathered = -1
    call MPI_ALLGATHERV(mine, rank + 1, MPI_INTEGER, gathered, counts, displs, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    call expect(ierr == MPI_SUCCESS .and. all(gathered == want), 'allgatherv integer')
    ! reduce_scatter: block r (r + 1 elements) of the sum lands on rank r
    allocate (rs(total), rsd(rank + 1), rswant(rank + 1))
    rs = [(ival(rank, k), k = 1, total)]
    rswant = 0
    do r = 0, np - 1
      rswant = rswant + [(ival(r, displs(rank + 1) + k), k = 1, rank + 1)]
    end do
    rsd = -1
    call MPI_REDUCE_SCATTER(rs, rsd, counts, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    call expect(ierr == MPI_SUCCESS .and. all(rsd == rswant), 'reduce_scatter integer sum, uneven blocks')
    ! alltoallv: rank i sends j + 1 elements to rank j, each i * 100 + j * 10 + k
    do j = 0, np - 1
      scounts(j + 1) = j + 1
      rcounts(j + 1) = rank + 1
    end do
    sdispls(1) = 0
    rdispls(1) = 0
    do j = 1, np - 1
      sdispls(j + 1) = sdispls(j) + scounts(j)
      rdispls(j + 1) = rdispls(j) + rcounts(j)
    end do
    allocate (sbuf(total), rbuf(np * (rank + 1)), rwant(np * (rank + 1)))
    do j = 0, np - 1
      sbuf(sdispls(j + 1) + 1:sdispls(j + 1) + j + 1) = [(rank * 100 + j * 10 + k, k = 1, j + 1)]
      rwant(rdispls(j + 1) + 1:rdispls(j + 1) + rank + 1) = [(j * 100 + rank * 10 + k, k = 1, rank + 1)]
    end do
    rbuf = -1
    call MPI_ALLTOALLV(sbuf, scounts, sdispls, MPI_INTEGER, rbuf, rcounts, rdispls, MPI_INTEGER, &
                       MPI_COMM_WORLD, ierr)
    call expect(ierr == MPI_SUCCESS .and. all(rbuf == rwant), 'alltoallv integer')
  end subroutine

  ! Every non-blocking collective, completed by MPI_WAIT, MPI_TEST, MPI_WAITALL or MPI_WAITANY.
  subroutine t_nonblocking(m)
    integer, intent(in) :: m
    integer :: req, reqs(6), idx, r, k, j, root
    logical :: done
    integer :: s(m * np), d(m * np), red(m), want(m * np), g(m * np), got(m), blk(m)
    integer :: counts(np), displs(np), one(1), vg(np)
    double precision :: x(m), xwant(m)
    root = np - 1
    ! ireduce to the last rank, completed by a test loop
    x = [(dval(rank, k), k = 1, m)]
    xwant = 0d0
    do r = 0, np - 1
      xwant = xwant + [(dval(r, k), k = 1, m)]
    end do
    if (rank == root) then   ! MPI_IN_PLACE is the root's alone
      call MPI_IREDUCE(MPI_IN_PLACE, x, m, MPI_DOUBLE_PRECISION, MPI_SUM, root, MPI_COMM_WORLD, req, ierr)
    else
      call MPI_IREDUCE(x, xwant, m, MPI_DOUBLE_PRECISION, MPI_SUM, root, MPI_COMM_WORLD, req, ierr)
    end if
    done = .false.
    do while (.not. done)
      call MPI_TEST(req, done, MPI_STATUS_IGNORE, ierr)
    end do
    if (rank == root) call expect(all(x == xwant), 'ireduce double precision sum, MPI_IN_PLACE at the root')
    ! iallgather, ialltoall, ireduce_scatter_block, ibarrier: one MPI_WAITALL
    s = [(ival(rank, k), k = 1, m * np)]
    g = -1
    d = -1
    red = -1
    call MPI_IALLGATHER(s, m, MPI_INTEGER, g, m, MPI_INTEGER, MPI_COMM_WORLD, reqs(1), ierr)
    call MPI_IALLTOALL(s, m, MPI_INTEGER, d, m, MPI_INTEGER, MPI_COMM_WORLD, reqs(2), ierr)
    call MPI_IREDUCE_SCATTER_BLOCK(s, red, m, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, reqs(3), ierr)
    call MPI_IBARRIER(MPI_COMM_WORLD, reqs(4), ierr)
    call MPI_WAITALL(4, reqs, MPI_STATUSES_IGNORE, ierr)
    call expect(ierr == MPI_SUCCESS .and. all(reqs(1:4) == MPI_REQUEST_NULL), 'waitall on four collectives')
    do r = 0, np - 1
      want(r * m + 1:r * m + m) = [(ival(r, k), k = 1, m)]
    end do
    call expect(all(g == want), 'iallgather integer')
    do j = 0, np - 1
      want(j * m + 1:j * m + m) = [(ival(j, rank * m + k), k = 1, m)]
    end do
    call expect(all(d == want), 'ialltoall integer')
    blk = 0
    do r = 0, np - 1
      blk = blk + [(ival(r, rank * m + k), k = 1, m)]
    end do
    call expect(all(red == blk), 'ireduce_scatter_block integer sum')
    ! igather, iscatter, iallgatherv, ireduce_scatter: MPI_WAITANY until all are done
    do r = 0, np - 1
      counts(r + 1) = 1
      displs(r + 1) = r
    end do
    g = -1
    got = -1
    vg = -1
    one = -1
    call MPI_IGATHER(s, m, MPI_INTEGER, g, m, MPI_INTEGER, 0, MPI_COMM_WORLD, reqs(1), ierr)
    call MPI_ISCATTER(s, m, MPI_INTEGER, got, m, MPI_INTEGER, root, MPI_COMM_WORLD, reqs(2), ierr)
    call MPI_IALLGATHERV(s, 1, MPI_INTEGER, vg, counts, displs, MPI_INTEGER, MPI_COMM_WORLD, reqs(3), ierr)
    call MPI_IREDUCE_SCATTER(s, one, counts, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, reqs(4), ierr)
    do k = 1, 4
      call MPI_WAITANY(4, reqs, idx, MPI_STATUS_IGNORE, ierr)
      call expect(ierr == MPI_SUCCESS .and. idx >= 1 .and. idx <= 4, 'waitany')
    end do
    call expect(all(reqs(1:4) == MPI_REQUEST_NULL), 'waitany completed all four')
    if (rank == 0) then
      do r = 0, np - 1
        want(r * m + 1:r * m + m) = [(ival(r, k), k = 1, m)]
      end do
      call expect(all(g == want), 'igather integer to rank 0')
    end if
    call expect(all(got == [(ival(root, rank * m + k), k = 1, m)]), 'iscatter integer from the last rank')
    call expect(all(vg == [(ival(r, 1), r = 0, np - 1)]), 'iallgatherv integer')
    call expect(one(1) == ival(np - 1, rank + 1), 'ireduce_scatter integer max')
    ! ialltoallv with one element each way, completed by MPI_WAIT
    vg = -1
    call MPI_IALLTOALLV(s, counts, displs, MPI_INTEGER, vg, counts, displs, MPI_INTEGER, MPI_COMM_WORLD, req, ierr)
    call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
    call expect(ierr == MPI_SUCCESS .and. all(vg == [(ival(r, rank + 1), r = 0, np - 1)]), 'ialltoallv integer')
  end subroutine

  ! Rank 0 adds up the failures (point-to-point), prints the line, and tells every rank the total.
  subroutine finish()
    integer :: total, x, r
    total = nfail
    if (rank == 0) then
      do r = 1, np - 1
        call MPI_RECV(x, 1, MPI_INTEGER, r, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
        total = total + x
      end do
      do r = 1, np - 1
        call MPI_SEND(total, 1, MPI_INTEGER, r, 98, MPI_COMM_WORLD, ierr)
      end do
      write (*, '(a,i0,a,i0)') 'fortran: P=', np, ' failures=', total
    else
      call MPI_SEND(nfail, 1, MPI_INTEGER, 0, 99, MPI_COMM_WORLD, ierr)
      call MPI_RECV(total, 1, MPI_INTEGER, 0, 98, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    end if
    call MPI_FINALIZE(ierr)
    if (total /= 0) stop 1
  end subroutine
end program
