! nodecoll's Fortran entry points as a Fortran program meets them: this program is built with
! the host MPI's own Fortran wrapper (it does not link nodecoll) and runs with nodecoll
! preloaded.  Every accelerated collective in each form (blocking, MPI_IN_PLACE, a derived
! datatype with gaps, nonblocking, persistent; the neighbourhood collectives on a distributed
! graph and a Cartesian ring), completed by every completion call in turn;
! the results are checked against exact arithmetic, and nodecoll's counters (looked up in the
! preloaded library) must show that nodecoll served each call.  Besides: Allreduce on the
! Fortran datatypes, MPI_BOTTOM, the point-to-point calls that progress nodecoll, errors in
! ierror, and MPI_TYPE_FREE of a type a pending request uses.
!
! One source for the three bindings: NC_BINDING 1 = mpif.h, 2 = use mpi, 3 = use mpi_f08.
! NC_OPEN_MPI: the host is Open MPI, whose persistent collectives are MPIX_ names.
#define CAT(a,b) a/**/b
#ifdef NC_OPEN_MPI
#define PINIT(n) CAT(CAT(MPIX_,n),_init)
#else
#define PINIT(n) CAT(CAT(MPI_,n),_init)
#endif
! One collective by `form` (a variable of the caller, with `req`): the nonblocking call
! completed by `complete`, the persistent one run by `run_persistent`, else the blocking call.
#define CALL_FORMS(blocking, nonblocking, persistent, what) \
  select case (form); case (F_NONBLOCKING); call nonblocking; call complete(req, .false., what); \
  case (F_PERSISTENT); call persistent; call run_persistent(req, what); case default; call blocking; end select
#if NC_BINDING == 3
#define HANDLE(kind) type(kind)
#define STATUS_VAR(v) type(MPI_Status) :: v
#define STATUS_ARRAY(v, n) type(MPI_Status) :: v(n)
#define SOURCE_OF(st) st%MPI_SOURCE
#define TAG_OF(st) st%MPI_TAG
#else
#define HANDLE(kind) integer
#define STATUS_VAR(v) integer :: v(MPI_STATUS_SIZE)
#define STATUS_ARRAY(v, n) integer :: v(MPI_STATUS_SIZE, n)
#define SOURCE_OF(st) st(MPI_SOURCE)
#define TAG_OF(st) st(MPI_TAG)
#endif

module nc_ftest
#if NC_BINDING == 3
  use mpi_f08
#ifdef NC_OPEN_MPI
  use mpi_f08_ext
#endif
#elif NC_BINDING == 2
  use mpi
#endif
  use, intrinsic :: iso_c_binding
  implicit none
#if NC_BINDING == 1
  include 'mpif.h'
#endif

  integer, parameter :: F_BLOCK = 1, F_INPLACE = 2, F_DERIVED = 3, F_NONBLOCKING = 4, F_PERSISTENT = 5, NFORMS = 5
  character(len=11), parameter :: form_names(NFORMS) = &
    [character(len=11) :: 'blocking', 'in place', 'derived', 'nonblocking', 'persistent']
  integer, parameter :: GAP = -7
  integer, parameter :: sizes(4) = [1, 9, 700, 20000]

  integer :: me, np, ierr, failures = 0, completion_style = 0
  HANDLE(MPI_Comm) :: comm
  ! two INTEGERs in an extent of four (every other INTEGER): a derived type with gaps
  HANDLE(MPI_Datatype) :: gtype
  ! two contiguous INTEGERs, the user op's datatype (pair_op)
  HANDLE(MPI_Datatype) :: ptype, pair_op_type ! (the type of the call pair_op serves)
  integer :: pair_op_bad_type = 0

  ! nodecoll's counters, looked up in the preloaded library
#include "nodecoll_counters.inc"
  character(len=20), parameter :: colls(22) = [character(len=20) :: 'barrier', 'bcast', 'gather', 'gatherv', &
    'scatter', 'scatterv', 'allgather', 'allgatherv', 'alltoall', 'alltoallv', 'alltoallw', 'reduce', &
    'allreduce', 'reduce_scatter', 'reduce_scatter_block', 'scan', 'exscan', 'neighbor_allgather', &
    'neighbor_allgatherv', 'neighbor_alltoall', 'neighbor_alltoallv', 'neighbor_alltoallw']
  integer(c_int64_t) :: seen_total(22) = 0, seen_fallback(22) = 0
  ! neighbourhoods: a distributed graph with an edge from s to r wherever s <= r (in-degree
  ! rank + 1, out-degree np - rank, a self-loop each), and from 3 ranks on a periodic ring
  ! (a 1-D Cartesian grid)
  HANDLE(MPI_Comm) :: gcomm, ccomm
  logical :: host_only = .false. ! (NODECOLL_TEST_HOST_ONLY=1: without nodecoll, checks the checks)

contains

  subroutine check(cond, what)
    logical, intent(in) :: cond
    character(*), intent(in) :: what
    if (.not. cond) then
      failures = failures + 1
      if (failures <= 20) print '(a,i0,a,i0,2a)', 'FAIL [rank ', me, '/', np, ']: ', what
    end if
  end subroutine

  subroutine ok(what)
    character(*), intent(in) :: what
    call check(ierr == MPI_SUCCESS, what//': ierror not MPI_SUCCESS')
  end subroutine

  subroutine check_ints(got, want, what)
    integer, intent(in) :: got(:), want(:)
    character(*), intent(in) :: what
    integer :: i
    character(len=80) :: where
    do i = 1, size(want)
      if (got(i) /= want(i)) then
        write (where, '(a,i0,a,i0,a,i0)') ': element ', i, ' is ', got(i), ', not ', want(i)
        call check(.false., what//trim(where))
        return
      end if
    end do
  end subroutine

  ! The call just made reached nodecoll and, on more than one rank, nodecoll served it.
  subroutine served(coll, form)
    character(*), intent(in) :: coll
    integer, intent(in) :: form
    integer :: k
    integer(c_int64_t) :: total, fallback
    if (host_only) return
    k = findloc(colls, coll, 1)
    total = stat_calls(trim(coll)//c_null_char, '*'//c_null_char)
    fallback = stat_calls(trim(coll)//c_null_char, 'pmpi:*'//c_null_char)
    call check(total > seen_total(k), trim(coll)//' '//trim(form_names(form))//': did not reach nodecoll')
    if (np > 1) call check(fallback == seen_fallback(k), trim(coll)//' '//trim(form_names(form))// &
                           ': nodecoll handed it to the host MPI')
    seen_total(k) = total
    seen_fallback(k) = fallback
  end subroutine

  ! Calls nodecoll hands to the host MPI on one rank (as it does every call on one rank)
  ! where the host itself gets them wrong from Fortran, at least in the versions tested here
  ! (Open MPI 4.1.4, MPICH 4.0.2): left out on one rank.
  logical function host_bug(coll, form)
    character(*), intent(in) :: coll
    integer, intent(in) :: form
    host_bug = .false.
    if (np > 1) return
#ifdef NC_OPEN_MPI
    ! coll/self's Alltoallw ignores the displacements
    host_bug = coll == 'alltoallw' .and. form /= F_NONBLOCKING .and. form /= F_PERSISTENT
#else
    ! MPICH's persistent Gatherv fails on one rank (an error at completion, or a crash),
    ! its Allgatherv ignores the displacement
    host_bug = form == F_PERSISTENT .or. (coll == 'allgatherv' .and. form /= F_INPLACE)
#endif
  end function

  integer function val(r, i)
    integer, intent(in) :: r, i
    val = r*1000000 + i
  end function

  ! The INTEGERs val(r, first+1 .. first+k) into buf at `at`: plainly (at in INTEGERs) or in
  ! gtype's layout (at in elements of gtype, two values each).
  subroutine put(buf, gapped, at, r, first, k)
    integer, intent(inout) :: buf(:)
    logical, intent(in) :: gapped
    integer, intent(in) :: at, r, first, k
    integer :: j
    do j = 1, k
      if (gapped) then
        buf(4*(at + (j - 1)/2) + 1 + 2*mod(j - 1, 2)) = val(r, first + j)
      else
        buf(at + j) = val(r, first + j)
      end if
    end do
  end subroutine

  integer function pick(form, salt)
    integer, intent(in) :: form, salt
    pick = sizes(mod(form + salt, size(sizes)) + 1)
  end function

  ! ---- completion: a nonblocking request by each completion call in turn ---------------------
  subroutine complete(req, persistent, what)
    HANDLE(MPI_Request), intent(inout) :: req
    logical, intent(in) :: persistent
    character(*), intent(in) :: what
    HANDLE(MPI_Request) :: reqs(2)
    STATUS_VAR(st)
    STATUS_ARRAY(sts, 2)
    logical :: flag
    integer :: idx, outcount, indices(2)
    completion_style = mod(completion_style, 9) + 1
    reqs(1) = req
    reqs(2) = MPI_REQUEST_NULL
    flag = .false.
    select case (completion_style)
    case (1)
      call MPI_Wait(reqs(1), MPI_STATUS_IGNORE, ierr)
    case (2)
      call MPI_Wait(reqs(1), st, ierr)
    case (3)
      do while (.not. flag)
        call MPI_Test(reqs(1), flag, st, ierr)
      end do
    case (4)
      call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
    case (5)
      call MPI_Waitany(2, reqs, idx, st, ierr)
      call check(idx == 1, what//': MPI_WAITANY index')
    case (6)
      call MPI_Waitsome(2, reqs, outcount, indices, sts, ierr)
      call check(outcount == 1 .and. indices(1) == 1, what//': MPI_WAITSOME outcount/indices')
    case (7)
      do while (.not. flag)
        call MPI_Testall(2, reqs, flag, sts, ierr)
      end do
    case (8)
      do while (.not. flag)
        call MPI_Testany(2, reqs, idx, flag, st, ierr)
      end do
      call check(idx == 1, what//': MPI_TESTANY index')
    case default
      do while (.not. flag)
        call MPI_Request_get_status(reqs(1), flag, st, ierr)
      end do
      outcount = 0
      do while (outcount == 0)
        call MPI_Testsome(2, reqs, outcount, indices, sts, ierr)
      end do
      call check(outcount == 1 .and. indices(1) == 1, what//': MPI_TESTSOME outcount/indices')
    end select
    call ok(what//': completion')
    req = reqs(1)
    if (.not. persistent) call check(req == MPI_REQUEST_NULL, what//': request not MPI_REQUEST_NULL after completion')
  end subroutine

  ! A persistent request: started by MPI_START, completed, started by MPI_STARTALL, completed, freed.
  subroutine run_persistent(req, what)
    HANDLE(MPI_Request), intent(inout) :: req
    character(*), intent(in) :: what
    HANDLE(MPI_Request) :: reqs(1)
    call ok(what//': init')
    call MPI_Start(req, ierr)
    call ok(what//': MPI_START')
    call complete(req, .true., what)
    reqs(1) = req
    call MPI_Startall(1, reqs, ierr)
    call ok(what//': MPI_STARTALL')
    req = reqs(1)
    call complete(req, .true., what)
    call MPI_Request_free(req, ierr)
    call ok(what//': MPI_REQUEST_FREE')
    call check(req == MPI_REQUEST_NULL, what//': request not MPI_REQUEST_NULL after MPI_REQUEST_FREE')
  end subroutine

  ! ---- the collectives ------------------------------------------------------------------------
  subroutine t_barrier(form)
    integer, intent(in) :: form
    HANDLE(MPI_Request) :: req
    if (host_bug('barrier', form)) return
    CALL_FORMS(MPI_Barrier(comm, ierr), MPI_Ibarrier(comm, req, ierr), PINIT(Barrier)(comm, MPI_INFO_NULL, req, ierr), 'barrier')
    call ok('barrier')
    call served('barrier', form)
  end subroutine

  subroutine t_bcast(form)
    integer, intent(in) :: form
    integer :: n, root
    logical :: g
    integer, allocatable :: buf(:), want(:)
    HANDLE(MPI_Request) :: req
    if (host_bug('bcast', form)) return
    n = 2*pick(form, 1)
    root = mod(form + 1, np)
    g = form == F_DERIVED
    allocate (buf(merge(2*n, n, g)), want(merge(2*n, n, g)))
    buf = GAP
    want = GAP
    call put(want, g, 0, root, 0, n)
    if (me == root) buf = want
    if (form == F_DERIVED) then
      call MPI_Bcast(buf, n/2, gtype, root, comm, ierr)
    else
      CALL_FORMS(MPI_Bcast(buf, n, MPI_INTEGER, root, comm, ierr),
                 MPI_Ibcast(buf, n, MPI_INTEGER, root, comm, req, ierr),
                 PINIT(Bcast)(buf, n, MPI_INTEGER, root, comm, MPI_INFO_NULL, req, ierr), 'bcast')
    end if
    call ok('bcast')
    call check_ints(buf, want, 'bcast '//form_names(form))
    call served('bcast', form)
  end subroutine

  ! Gather and Allgather (all: every rank receives), n INTEGERs from each rank; the receivers
  ! take them plainly or (derived) as n/2 elements of gtype.
  subroutine t_gather(form, all)
    integer, intent(in) :: form
    logical, intent(in) :: all
    integer :: n, root, r, per
    logical :: g, receives
    integer, allocatable :: sb(:), rb(:), want(:)
    HANDLE(MPI_Request) :: req
    character(len=9) :: coll
    coll = merge('allgather', 'gather   ', all)
    if (host_bug(trim(coll), form)) return
    n = 2*pick(form, 2)
    root = mod(form, np)
    g = form == F_DERIVED
    receives = all .or. me == root
    per = merge(2*n, n, g)
    allocate (sb(n), rb(per*np), want(per*np))
    call put(sb, .false., 0, me, 0, n)
    rb = GAP
    want = GAP
    do r = 0, np - 1
      call put(want, g, merge(r*n/2, r*n, g), r, 0, n)
    end do
    if (form == F_INPLACE .and. receives) call put(rb, .false., me*n, me, 0, n)
    if (form == F_INPLACE .and. all) then
      call MPI_Allgather(MPI_IN_PLACE, n, MPI_INTEGER, rb, n, MPI_INTEGER, comm, ierr)
    else if (form == F_INPLACE .and. me == root) then
      call MPI_Gather(MPI_IN_PLACE, n, MPI_INTEGER, rb, n, MPI_INTEGER, root, comm, ierr)
    else if (form == F_DERIVED .and. all) then
      call MPI_Allgather(sb, n, MPI_INTEGER, rb, n/2, gtype, comm, ierr)
    else if (form == F_DERIVED) then
      call MPI_Gather(sb, n, MPI_INTEGER, rb, n/2, gtype, root, comm, ierr)
    else if (all) then
      CALL_FORMS(MPI_Allgather(sb, n, MPI_INTEGER, rb, n, MPI_INTEGER, comm, ierr),
                 MPI_Iallgather(sb, n, MPI_INTEGER, rb, n, MPI_INTEGER, comm, req, ierr),
                 PINIT(Allgather)(sb, n, MPI_INTEGER, rb, n, MPI_INTEGER, comm, MPI_INFO_NULL, req, ierr), coll)
    else
      CALL_FORMS(MPI_Gather(sb, n, MPI_INTEGER, rb, n, MPI_INTEGER, root, comm, ierr),
                 MPI_Igather(sb, n, MPI_INTEGER, rb, n, MPI_INTEGER, root, comm, req, ierr),
                 PINIT(Gather)(sb, n, MPI_INTEGER, rb, n, MPI_INTEGER, root, comm, MPI_INFO_NULL, req, ierr), coll)
    end if
    call ok(coll)
    if (receives) call check_ints(rb, want, trim(coll)//' '//form_names(form))
    call served(trim(coll), form)
  end subroutine

  ! Gatherv and Allgatherv: rank r sends counts(r) INTEGERs (some none), placed at displs(r)
  ! with a gap of one unit before each; (derived) everything counted in elements of gtype.
  subroutine t_gatherv(form, all)
    integer, intent(in) :: form
    logical, intent(in) :: all
    integer :: base, root, r, counts(0:np - 1), displs(0:np - 1), units
    logical :: g, receives
    integer, allocatable :: sb(:), rb(:), want(:)
    HANDLE(MPI_Request) :: req
    character(len=10) :: coll
    HANDLE(MPI_Datatype) :: t
    coll = merge('allgatherv', 'gatherv   ', all)
    if (host_bug(trim(coll), form)) return
    base = pick(form, 3)
    root = mod(form + 2, np)
    g = form == F_DERIVED
    t = MPI_INTEGER
    if (g) t = gtype
    units = 0
    do r = 0, np - 1
      counts(r) = mod(r + form, 3)*base
      displs(r) = units + 1
      units = units + counts(r) + 1
    end do
    receives = all .or. me == root
    ! (derived: the senders send gtype elements too, two values each)
    allocate (sb(merge(4, 1, g)*max(counts(me), 1)), rb(merge(4, 1, g)*units), want(merge(4, 1, g)*units))
    sb = GAP
    call put(sb, g, 0, me, 0, merge(2, 1, g)*counts(me))
    rb = GAP
    want = GAP
    do r = 0, np - 1
      call put(want, g, displs(r), r, 0, merge(2, 1, g)*counts(r))
    end do
    if (form == F_INPLACE .and. receives) call put(rb, .false., displs(me), me, 0, counts(me))
    if (form == F_INPLACE .and. all) then
      call MPI_Allgatherv(MPI_IN_PLACE, counts(me), t, rb, counts, displs, t, comm, ierr)
    else if (form == F_INPLACE .and. me == root) then
      call MPI_Gatherv(MPI_IN_PLACE, counts(me), t, rb, counts, displs, t, root, comm, ierr)
    else if (all) then
      CALL_FORMS(MPI_Allgatherv(sb, counts(me), t, rb, counts, displs, t, comm, ierr),
                 MPI_Iallgatherv(sb, counts(me), t, rb, counts, displs, t, comm, req, ierr),
                 PINIT(Allgatherv)(sb, counts(me), t, rb, counts, displs, t, comm, MPI_INFO_NULL, req, ierr), coll)
    else
      CALL_FORMS(MPI_Gatherv(sb, counts(me), t, rb, counts, displs, t, root, comm, ierr),
                 MPI_Igatherv(sb, counts(me), t, rb, counts, displs, t, root, comm, req, ierr),
                 PINIT(Gatherv)(sb, counts(me), t, rb, counts, displs, t, root, comm, MPI_INFO_NULL, req, ierr), coll)
    end if
    call ok(coll)
    if (receives) call check_ints(rb, want, trim(coll)//' '//form_names(form))
    call served(trim(coll), form)
  end subroutine

  ! Scatter (base INTEGERs to each rank) and Scatterv (counts(r) INTEGERs to rank r, some
  ! none, from displs(r), with gaps); derived: Scatter's root sends gtype elements,
  ! Scatterv's receivers take them.
  subroutine t_scatter(form, v)
    integer, intent(in) :: form
    logical, intent(in) :: v
    integer :: base, root, r, counts(0:np - 1), displs(0:np - 1), units, c
    logical :: gsend, grecv
    integer, allocatable :: sb(:), rb(:), want(:)
    HANDLE(MPI_Request) :: req
    character(len=8) :: coll
    coll = merge('scatterv', 'scatter ', v)
    if (host_bug(trim(coll), form)) return
    base = 2*pick(form, 5)
    root = mod(form + 1, np)
    gsend = form == F_DERIVED .and. .not. v
    grecv = form == F_DERIVED .and. v
    units = 0
    do r = 0, np - 1
      counts(r) = base
      displs(r) = units
      if (v) counts(r) = mod(r + form + 1, 3)*base
      if (v) displs(r) = units + 2
      units = displs(r) + counts(r)
    end do
    c = counts(me)
    allocate (sb(merge(2, 1, gsend)*max(units, 1)), rb(merge(2, 1, grecv)*max(c, 1)), want(merge(2, 1, grecv)*max(c, 1)))
    sb = GAP
    do r = 0, np - 1
      call put(sb, gsend, merge(displs(r)/2, displs(r), gsend), root, r*100000, counts(r))
    end do
    rb = GAP
    want = GAP
    call put(want, grecv, 0, root, me*100000, c)
    if (form == F_INPLACE .and. me == root) then
      if (v) call MPI_Scatterv(sb, counts, displs, MPI_INTEGER, MPI_IN_PLACE, c, MPI_INTEGER, root, comm, ierr)
      if (.not. v) call MPI_Scatter(sb, c, MPI_INTEGER, MPI_IN_PLACE, c, MPI_INTEGER, root, comm, ierr)
      if (c > 0) rb(1:c) = sb(displs(me) + 1:displs(me) + c)
    else if (gsend) then
      call MPI_Scatter(sb, c/2, gtype, rb, c, MPI_INTEGER, root, comm, ierr)
    else if (grecv) then
      call MPI_Scatterv(sb, counts, displs, MPI_INTEGER, rb, c/2, gtype, root, comm, ierr)
    else if (v) then
      CALL_FORMS(MPI_Scatterv(sb, counts, displs, MPI_INTEGER, rb, c, MPI_INTEGER, root, comm, ierr),
                 MPI_Iscatterv(sb, counts, displs, MPI_INTEGER, rb, c, MPI_INTEGER, root, comm, req, ierr),
                 PINIT(Scatterv)(sb, counts, displs, MPI_INTEGER, rb, c, MPI_INTEGER, root, comm, MPI_INFO_NULL, req, ierr),
                 coll)
    else
      CALL_FORMS(MPI_Scatter(sb, c, MPI_INTEGER, rb, c, MPI_INTEGER, root, comm, ierr),
                 MPI_Iscatter(sb, c, MPI_INTEGER, rb, c, MPI_INTEGER, root, comm, req, ierr),
                 PINIT(Scatter)(sb, c, MPI_INTEGER, rb, c, MPI_INTEGER, root, comm, MPI_INFO_NULL, req, ierr), coll)
    end if
    call ok(coll)
    call check_ints(rb, want, trim(coll)//' '//form_names(form))
    call served(trim(coll), form)
  end subroutine

  ! Alltoall: n INTEGERs from each rank to each (values numbered by destination); derived:
  ! the senders' blocks are n/2 gtype elements.
  subroutine t_alltoall(form)
    integer, intent(in) :: form
    integer :: n, r
    logical :: g
    integer, allocatable :: sb(:), rb(:), want(:)
    HANDLE(MPI_Request) :: req
    if (host_bug('alltoall', form)) return
    n = 2*pick(form, 6)
    g = form == F_DERIVED
    allocate (sb(merge(2, 1, g)*n*np), rb(n*np), want(n*np))
    do r = 0, np - 1
      call put(sb, g, merge(r*n/2, r*n, g), me, r*n, n)
      call put(want, .false., r*n, r, me*n, n)
    end do
    rb = GAP
    if (form == F_INPLACE) then
      rb = sb
      call MPI_Alltoall(MPI_IN_PLACE, n, MPI_INTEGER, rb, n, MPI_INTEGER, comm, ierr)
    else if (form == F_DERIVED) then
      call MPI_Alltoall(sb, n/2, gtype, rb, n, MPI_INTEGER, comm, ierr)
    else
      CALL_FORMS(MPI_Alltoall(sb, n, MPI_INTEGER, rb, n, MPI_INTEGER, comm, ierr),
                 MPI_Ialltoall(sb, n, MPI_INTEGER, rb, n, MPI_INTEGER, comm, req, ierr),
                 PINIT(Alltoall)(sb, n, MPI_INTEGER, rb, n, MPI_INTEGER, comm, MPI_INFO_NULL, req, ierr), 'alltoall')
    end if
    call ok('alltoall')
    call check_ints(rb, want, 'alltoall '//form_names(form))
    call served('alltoall', form)
  end subroutine

  ! Alltoallv and Alltoallw: rank s sends rank d size(s, d) values (some none), at
  ! displacements with gaps.  Alltoallw's blocks alternate plain INTEGERs and gtype elements
  ! (by peer, differently on the two sides); Alltoallv's derived form receives gtype elements.
  subroutine t_alltoallv(form, w)
    integer, intent(in) :: form
    logical, intent(in) :: w
    integer :: base, r, at, sc(0:np - 1), sd(0:np - 1), rc(0:np - 1), rd(0:np - 1), sunits, runits
    logical :: sg(0:np - 1), rg(0:np - 1)
    integer, allocatable :: sb(:), rb(:), want(:)
    HANDLE(MPI_Datatype) :: st(0:np - 1), rt(0:np - 1)
    HANDLE(MPI_Request) :: req
    character(len=9) :: coll
    coll = merge('alltoallw', 'alltoallv', w)
    if (host_bug(trim(coll), form)) return
    base = 2*pick(form, 7)
    ! layouts: gapped blocks (gtype) where sg/rg; in place the receive side describes both
    do r = 0, np - 1
      sg(r) = w .and. mod(r, 2) == 1
      rg(r) = (w .and. mod(r + me, 2) == 0) .or. (.not. w .and. form == F_DERIVED)
      if (form == F_INPLACE) sg(r) = rg(r)
    end do
    ! counts: what me sends r is what r expects from me (in place: the same both ways);
    ! a gapped block starts at a multiple of four INTEGERs (a whole gtype element)
    sunits = 0
    runits = 0
    do r = 0, np - 1
      sc(r) = mod(me + 2*r + form, 3)*base
      rc(r) = mod(r + 2*me + form, 3)*base
      if (form == F_INPLACE) rc(r) = mod(me + r + form, 3)*base
      if (form == F_INPLACE) sc(r) = rc(r)
      sd(r) = sunits + 1
      if (sg(r)) sd(r) = 4*((sd(r) + 3)/4)
      sunits = sd(r) + merge(2, 1, sg(r))*sc(r)
      rd(r) = runits + 1
      if (rg(r)) rd(r) = 4*((rd(r) + 3)/4)
      runits = rd(r) + merge(2, 1, rg(r))*rc(r)
    end do
    allocate (sb(sunits), rb(runits), want(runits))
    sb = GAP
    rb = GAP
    want = GAP
    do r = 0, np - 1
      call put(sb, sg(r), merge(sd(r)/4, sd(r), sg(r)), me, r*100000, sc(r))
      call put(want, rg(r), merge(rd(r)/4, rd(r), rg(r)), r, me*100000, rc(r))
    end do
    do r = 0, np - 1
      st(r) = MPI_INTEGER
      rt(r) = MPI_INTEGER
      if (sg(r)) st(r) = gtype
      if (rg(r)) rt(r) = gtype
      if (sg(r)) sc(r) = sc(r)/2
      if (rg(r)) rc(r) = rc(r)/2
    end do
    if (form == F_INPLACE) rb = sb
    if (w) then
      sd = 4*sd ! (bytes)
      rd = 4*rd
    end if
    if (form == F_INPLACE .and. w) then
      call MPI_Alltoallw(MPI_IN_PLACE, sc, sd, st, rb, rc, rd, rt, comm, ierr)
    else if (form == F_INPLACE) then
      call MPI_Alltoallv(MPI_IN_PLACE, sc, sd, MPI_INTEGER, rb, rc, rd, MPI_INTEGER, comm, ierr)
    else if (form == F_DERIVED .and. .not. w) then
      ! (displacements in units of gtype's extent: the gapped blocks are placed by element)
      call MPI_Alltoallv(sb, sc, sd, MPI_INTEGER, rb, rc, rd/4, gtype, comm, ierr)
    else if (w) then
      CALL_FORMS(MPI_Alltoallw(sb, sc, sd, st, rb, rc, rd, rt, comm, ierr),
                 MPI_Ialltoallw(sb, sc, sd, st, rb, rc, rd, rt, comm, req, ierr),
                 PINIT(Alltoallw)(sb, sc, sd, st, rb, rc, rd, rt, comm, MPI_INFO_NULL, req, ierr), coll)
    else
      CALL_FORMS(MPI_Alltoallv(sb, sc, sd, MPI_INTEGER, rb, rc, rd, MPI_INTEGER, comm, ierr),
                 MPI_Ialltoallv(sb, sc, sd, MPI_INTEGER, rb, rc, rd, MPI_INTEGER, comm, req, ierr),
                 PINIT(Alltoallv)(sb, sc, sd, MPI_INTEGER, rb, rc, rd, MPI_INTEGER, comm, MPI_INFO_NULL, req, ierr), coll)
    end if
    call ok(coll)
    call check_ints(rb, want, coll//' '//form_names(form))
    call served(coll, form)
  end subroutine

  ! ---- neighbourhood collectives ---------------------------------------------------------------
  subroutine make_neighborhoods()
    integer :: sources(np), dests(np), k, dims(1)
    logical :: periods(1)
    do k = 0, me
      sources(k + 1) = k
    end do
    do k = me, np - 1
      dests(k - me + 1) = k
    end do
    call MPI_Dist_graph_create_adjacent(comm, me + 1, sources, MPI_UNWEIGHTED, np - me, dests, MPI_UNWEIGHTED, &
                                        MPI_INFO_NULL, .false., gcomm, ierr)
    call ok('MPI_DIST_GRAPH_CREATE_ADJACENT')
    ! (nodecoll sets a communicator up in its first blocking collective)
    call MPI_Barrier(gcomm, ierr)
    if (np < 3) return
    dims(1) = np
    periods(1) = .true.
    call MPI_Cart_create(comm, 1, dims, periods, .false., ccomm, ierr)
    call ok('MPI_CART_CREATE')
    call MPI_Barrier(ccomm, ierr)
  end subroutine

  ! Rank s's block for its out-edge j (the gathers send one block: j = 0).
  integer function neighbor_count(which, form, base, s, j)
    character(*), intent(in) :: which
    integer, intent(in) :: form, base, s, j
    select case (which)
    case ('neighbor_allgatherv')
      neighbor_count = mod(s + form, 3)*base
    case ('neighbor_alltoallv', 'neighbor_alltoallw')
      neighbor_count = mod(s + 2*j + form, 3)*base
    case default
      neighbor_count = base
    end select
  end function

  ! Each neighbourhood collective on the graph or the ring (blocking, nonblocking, persistent;
  ! derived: received into gtype, Neighbor_alltoallw's every other in-edge): out-block j of
  ! rank s holds val(s, j*100000 + i); in-edge k comes from src(k)'s out-edge feed(k) (the
  ! graph: the one edge between them; the ring: below sends up, MPI's rule for Cartesian
  ! grids), in the receive buffer at displacements with a gap before each block.
  subroutine t_neighbor(form, which)
    integer, intent(in) :: form
    character(*), intent(in) :: which
    logical :: cart, gather, vec, w, rg(0:np)
    integer :: base, k, j, nin, nout, sunits, runits, n
    integer :: src(0:np), feed(0:np), sc(0:np), sd(0:np), rc(0:np), rd(0:np), rcv(0:np), rdv(0:np)
    integer(kind=MPI_ADDRESS_KIND) :: sdb(0:np), rdb(0:np)
    integer, allocatable :: sb(:), rb(:), want(:)
    HANDLE(MPI_Datatype) :: st(0:np), rt(0:np), t
    HANDLE(MPI_Comm) :: nc
    HANDLE(MPI_Request) :: req
    if (form == F_INPLACE .or. host_bug(which, form)) return ! (MPI has no MPI_IN_PLACE for them)
    cart = np >= 3 .and. mod(form + len(which), 2) == 0
    gather = index(which, 'gather') > 0
    w = which == 'neighbor_alltoallw'
    vec = w .or. which == 'neighbor_alltoallv' .or. which == 'neighbor_allgatherv'
    base = 2*pick(form, len(which))
    n = base
#if NC_BINDING == 3 && !defined(NC_OPEN_MPI)
    ! MPICH 4.0.2's mpi_f08 (I)Neighbor_alltoallw(_init) size their type arrays with
    ! MPI_Dist_graph_neighbors_count whatever the topology: MPI_ERR_TOPOLOGY on the ring
    if (w) cart = .false.
#endif
    if (cart) then
      nc = ccomm
      nin = 2
      nout = 2
      src(0) = mod(me - 1 + np, np)
      src(1) = mod(me + 1, np)
      feed(0) = 1
      feed(1) = 0
    else
      nc = gcomm
      nin = me + 1
      nout = np - me
      do k = 0, me
        src(k) = k
        feed(k) = me - k
      end do
    end if
    ! the send side, plain INTEGERs
    sunits = 0
    do j = 0, merge(0, nout - 1, gather)
      sc(j) = neighbor_count(which, form, base, me, j)
      sd(j) = sunits + merge(1, 0, vec .and. .not. gather) ! (a gather's one block is the send buffer)
      sunits = sd(j) + sc(j)
    end do
    allocate (sb(max(sunits, 1)))
    sb = GAP
    do j = 0, merge(0, nout - 1, gather)
      call put(sb, .false., sd(j), me, j*100000, sc(j))
    end do
    ! the receive side: gapped blocks start at a whole gtype element (four INTEGERs)
    runits = 0
    do k = 0, nin - 1
      rg(k) = form == F_DERIVED .and. (.not. w .or. mod(k, 2) == 0)
      rc(k) = neighbor_count(which, form, base, src(k), merge(0, feed(k), gather))
      rd(k) = runits + merge(1, 0, vec)
      if (rg(k)) rd(k) = 4*((rd(k) + 3)/4)
      runits = rd(k) + merge(2, 1, rg(k))*rc(k)
      rcv(k) = merge(rc(k)/2, rc(k), rg(k))
      rdv(k) = merge(rd(k)/4, rd(k), rg(k))
      rt(k) = MPI_INTEGER
      if (rg(k)) rt(k) = gtype
    end do
    allocate (rb(max(runits, 1)), want(max(runits, 1)))
    rb = GAP
    want = GAP
    do k = 0, nin - 1
      call put(want, rg(k), rdv(k), src(k), merge(0, feed(k)*100000, gather), rc(k))
    end do
    do j = 0, nout - 1
      st(j) = MPI_INTEGER
      sdb(j) = 4*sd(j) ! (bytes)
    end do
    rdb = 4*rd
    t = rt(0)
    select case (which)
    case ('neighbor_allgather')
      CALL_FORMS(MPI_Neighbor_allgather(sb, n, MPI_INTEGER, rb, rcv(0), t, nc, ierr),
                 MPI_Ineighbor_allgather(sb, n, MPI_INTEGER, rb, rcv(0), t, nc, req, ierr),
                 PINIT(Neighbor_allgather)(sb, n, MPI_INTEGER, rb, rcv(0), t, nc, MPI_INFO_NULL, req, ierr), which)
    case ('neighbor_allgatherv')
      CALL_FORMS(MPI_Neighbor_allgatherv(sb, sc(0), MPI_INTEGER, rb, rcv, rdv, t, nc, ierr),
                 MPI_Ineighbor_allgatherv(sb, sc(0), MPI_INTEGER, rb, rcv, rdv, t, nc, req, ierr),
                 PINIT(Neighbor_allgatherv)(sb, sc(0), MPI_INTEGER, rb, rcv, rdv, t, nc, MPI_INFO_NULL, req, ierr), which)
    case ('neighbor_alltoall')
      CALL_FORMS(MPI_Neighbor_alltoall(sb, n, MPI_INTEGER, rb, rcv(0), t, nc, ierr),
                 MPI_Ineighbor_alltoall(sb, n, MPI_INTEGER, rb, rcv(0), t, nc, req, ierr),
                 PINIT(Neighbor_alltoall)(sb, n, MPI_INTEGER, rb, rcv(0), t, nc, MPI_INFO_NULL, req, ierr), which)
    case ('neighbor_alltoallv')
      CALL_FORMS(MPI_Neighbor_alltoallv(sb, sc, sd, MPI_INTEGER, rb, rcv, rdv, t, nc, ierr),
                 MPI_Ineighbor_alltoallv(sb, sc, sd, MPI_INTEGER, rb, rcv, rdv, t, nc, req, ierr),
                 PINIT(Neighbor_alltoallv)(sb, sc, sd, MPI_INTEGER, rb, rcv, rdv, t, nc, MPI_INFO_NULL, req, ierr), which)
    case default
      CALL_FORMS(MPI_Neighbor_alltoallw(sb, sc, sdb, st, rb, rcv, rdb, rt, nc, ierr),
                 MPI_Ineighbor_alltoallw(sb, sc, sdb, st, rb, rcv, rdb, rt, nc, req, ierr),
                 PINIT(Neighbor_alltoallw)(sb, sc, sdb, st, rb, rcv, rdb, rt, nc, MPI_INFO_NULL, req, ierr), which)
    end select
    call ok(which)
    call check_ints(rb, want, which//' '//trim(form_names(form))//merge(' (ring) ', ' (graph)', cart))
    call served(which, form)
  end subroutine

  ! ---- reductions: MPI_SUM on INTEGERs, or (derived) MPI_MAXLOC on MPI_2INTEGER pairs --------
  ! element i of rank r's operand
  subroutine operand(buf, pairs, r, first, k)
    integer, intent(inout) :: buf(:)
    logical, intent(in) :: pairs
    integer, intent(in) :: r, first, k
    integer :: j
    do j = 1, k
      if (pairs) then
        buf(2*j - 1) = mod(r*7 + first + j, 5)
        buf(2*j) = r
      else
        buf(j) = val(r, first + j)
      end if
    end do
  end subroutine

  ! elements first+1 .. first+k of the reduction over ranks lo..hi
  subroutine reduced(buf, pairs, lo, hi, first, k)
    integer, intent(inout) :: buf(:)
    logical, intent(in) :: pairs
    integer, intent(in) :: lo, hi, first, k
    integer :: j, r, v
    do j = 1, k
      if (pairs) then
        buf(2*j - 1) = -1
        do r = lo, hi
          v = mod(r*7 + first + j, 5)
          if (v > buf(2*j - 1)) then
            buf(2*j - 1) = v
            buf(2*j) = r
          end if
        end do
      else
        buf(j) = 0
        do r = lo, hi
          buf(j) = buf(j) + val(r, first + j)
        end do
      end if
    end do
  end subroutine

  ! Reduce (root), Allreduce, Scan and Exscan: which = the collective's name.
  subroutine t_reduce(form, which)
    integer, intent(in) :: form
    character(*), intent(in) :: which
    integer :: n, w, root, lo, hi
    logical :: pairs, receives
    integer, allocatable :: sb(:), rb(:), want(:)
    HANDLE(MPI_Request) :: req
    HANDLE(MPI_Datatype) :: t
    HANDLE(MPI_Op) :: op
    if (host_bug(which, form)) return
    n = pick(form, len(which))
    root = mod(form + 2, np)
    pairs = form == F_DERIVED
    w = merge(2, 1, pairs)
    t = MPI_INTEGER
    op = MPI_SUM
    if (pairs) t = MPI_2INTEGER
    if (pairs) op = MPI_MAXLOC
    lo = 0
    hi = np - 1
    if (which == 'scan') hi = me
    if (which == 'exscan') hi = me - 1
    receives = (which /= 'reduce' .or. me == root) .and. hi >= lo
    allocate (sb(w*n), rb(w*n), want(w*n))
    call operand(sb, pairs, me, 0, n)
    call reduced(want, pairs, lo, hi, 0, n)
    rb = GAP
    if (form == F_INPLACE) rb = sb
    if (form == F_INPLACE .and. which == 'reduce' .and. me == root) then
      call MPI_Reduce(MPI_IN_PLACE, rb, n, t, op, root, comm, ierr)
    else if (form == F_INPLACE .and. which == 'allreduce') then
      call MPI_Allreduce(MPI_IN_PLACE, rb, n, t, op, comm, ierr)
    else if (form == F_INPLACE .and. which == 'scan') then
      call MPI_Scan(MPI_IN_PLACE, rb, n, t, op, comm, ierr)
    else if (form == F_INPLACE .and. which == 'exscan') then
      call MPI_Exscan(MPI_IN_PLACE, rb, n, t, op, comm, ierr)
    else if (which == 'reduce') then
      CALL_FORMS(MPI_Reduce(sb, rb, n, t, op, root, comm, ierr), MPI_Ireduce(sb, rb, n, t, op, root, comm, req, ierr),
                 PINIT(Reduce)(sb, rb, n, t, op, root, comm, MPI_INFO_NULL, req, ierr), which)
    else if (which == 'allreduce') then
      CALL_FORMS(MPI_Allreduce(sb, rb, n, t, op, comm, ierr), MPI_Iallreduce(sb, rb, n, t, op, comm, req, ierr),
                 PINIT(Allreduce)(sb, rb, n, t, op, comm, MPI_INFO_NULL, req, ierr), which)
    else if (which == 'scan') then
      CALL_FORMS(MPI_Scan(sb, rb, n, t, op, comm, ierr), MPI_Iscan(sb, rb, n, t, op, comm, req, ierr),
                 PINIT(Scan)(sb, rb, n, t, op, comm, MPI_INFO_NULL, req, ierr), which)
    else
      CALL_FORMS(MPI_Exscan(sb, rb, n, t, op, comm, ierr), MPI_Iexscan(sb, rb, n, t, op, comm, req, ierr),
                 PINIT(Exscan)(sb, rb, n, t, op, comm, MPI_INFO_NULL, req, ierr), which)
    end if
    call ok(which)
    if (receives) call check_ints(rb, want, which//' '//form_names(form))
    call served(which, form)
  end subroutine

  ! Reduce_scatter (counts(r) elements to rank r, some none) and Reduce_scatter_block.
  subroutine t_reduce_scatter(form, block)
    integer, intent(in) :: form
    logical, intent(in) :: block
    integer :: base, w, r, counts(0:np - 1), total, first
    logical :: pairs
    integer, allocatable :: sb(:), rb(:), want(:)
    HANDLE(MPI_Request) :: req
    HANDLE(MPI_Datatype) :: t
    HANDLE(MPI_Op) :: op
    character(len=20) :: coll
    coll = merge('reduce_scatter_block', 'reduce_scatter      ', block)
    if (host_bug(trim(coll), form)) return
    base = pick(form, 8)
    pairs = form == F_DERIVED
    w = merge(2, 1, pairs)
    t = MPI_INTEGER
    op = MPI_SUM
    if (pairs) t = MPI_2INTEGER
    if (pairs) op = MPI_MAXLOC
    do r = 0, np - 1
      counts(r) = base
      if (.not. block) counts(r) = mod(r + form, 3)*base
    end do
    total = sum(counts)
    first = sum(counts(0:me - 1))
    allocate (sb(w*max(total, 1)), rb(w*max(total, 1)), want(w*max(counts(me), 1)))
    call operand(sb, pairs, me, 0, total)
    call reduced(want, pairs, 0, np - 1, first, counts(me))
    rb = GAP
    if (form == F_INPLACE) rb = sb
    if (form == F_INPLACE .and. block) then
      call MPI_Reduce_scatter_block(MPI_IN_PLACE, rb, base, t, op, comm, ierr)
    else if (form == F_INPLACE) then
      call MPI_Reduce_scatter(MPI_IN_PLACE, rb, counts, t, op, comm, ierr)
    else if (block) then
      CALL_FORMS(MPI_Reduce_scatter_block(sb, rb, base, t, op, comm, ierr),
                 MPI_Ireduce_scatter_block(sb, rb, base, t, op, comm, req, ierr),
                 PINIT(Reduce_scatter_block)(sb, rb, base, t, op, comm, MPI_INFO_NULL, req, ierr), coll)
    else
      CALL_FORMS(MPI_Reduce_scatter(sb, rb, counts, t, op, comm, ierr),
                 MPI_Ireduce_scatter(sb, rb, counts, t, op, comm, req, ierr),
                 PINIT(Reduce_scatter)(sb, rb, counts, t, op, comm, MPI_INFO_NULL, req, ierr), coll)
    end if
    call ok(coll)
    call check_ints(rb(1:w*counts(me)), want(1:w*counts(me)), trim(coll)//' '//form_names(form))
    call served(trim(coll), form)
  end subroutine

  ! ---- a communicator's first call nonblocking: nodecoll hands it to the host --------------
  ! (Ialltoallw: the datatype arrays the host reads until the operation completes)
  subroutine t_first_nonblocking()
    HANDLE(MPI_Comm) :: c
    HANDLE(MPI_Request) :: req
    HANDLE(MPI_Datatype) :: types(0:np - 1)
    integer :: ones(0:np - 1), displs(0:np - 1), sb(0:np - 1), rb(0:np - 1), r
    call MPI_Comm_dup(comm, c, ierr)
    do r = 0, np - 1
      types(r) = MPI_INTEGER
      ones(r) = 1
      displs(r) = 4*r
      sb(r) = val(me, r)
    end do
    rb = GAP
    call MPI_Ialltoallw(sb, ones, displs, types, rb, ones, displs, types, c, req, ierr)
    call ok('Ialltoallw as the first call on a communicator')
    call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
    call check_ints(rb, [(val(r, me), r=0, np - 1)], 'Ialltoallw as the first call on a communicator')
    call MPI_Comm_free(c, ierr)
    call resync() ! (a call nodecoll left to the host)
  end subroutine

  ! ---- a user op (MPI_OP_CREATE) on a derived type: pairs of INTEGERs, summed and maxed ------
  ! (the function checks that it is given the datatype's Fortran handle)
  subroutine pair_op(invec, inoutvec, len, datatype)
#if NC_BINDING == 3
    type(c_ptr), value :: invec, inoutvec
    integer :: len
    type(MPI_Datatype) :: datatype
    integer, pointer :: a(:, :), b(:, :)
    call c_f_pointer(invec, a, [2, len])
    call c_f_pointer(inoutvec, b, [2, len])
#else
    integer :: len, datatype
    integer :: invec(2, len), inoutvec(2, len)
#define a invec
#define b inoutvec
#endif
    if (.not. (datatype == pair_op_type)) pair_op_bad_type = pair_op_bad_type + 1
    b(1, :) = a(1, :) + b(1, :)
    b(2, :) = max(a(2, :), b(2, :))
#undef a
#undef b
  end subroutine

  ! Allreduce (Reduce to a root in the derived form) with it; the persistent request's op and
  ! datatype are freed before it starts.
  subroutine t_user_op(form)
    integer, intent(in) :: form
    integer :: n, r, i, root
    logical :: receives
    integer, allocatable :: sb(:, :), rb(:, :), want(:, :)
    HANDLE(MPI_Op) :: op
    HANDLE(MPI_Datatype) :: t
    HANDLE(MPI_Request) :: req
    character(len=9) :: coll
    coll = merge('reduce   ', 'allreduce', form == F_DERIVED)
    if (host_bug(trim(coll), form)) return
    n = pick(form, 9)
    root = mod(form, np)
    receives = form /= F_DERIVED .or. me == root
    allocate (sb(2, n), rb(2, n), want(2, n))
    do i = 1, n
      sb(:, i) = [val(me, i), mod(me*3 + i, 7)]
      want(:, i) = [sum([(val(r, i), r=0, np - 1)]), maxval([(mod(r*3 + i, 7), r=0, np - 1)])]
    end do
    rb = GAP
    call MPI_Op_create(pair_op, .true., op, ierr)
    call ok('MPI_OP_CREATE')
    t = ptype
    pair_op_type = t
    select case (form)
    case (F_INPLACE)
      rb = sb
      call MPI_Allreduce(MPI_IN_PLACE, rb, n, t, op, comm, ierr)
    case (F_DERIVED)
      call MPI_Reduce(sb, rb, n, t, op, root, comm, ierr)
    case (F_NONBLOCKING)
      call MPI_Iallreduce(sb, rb, n, t, op, comm, req, ierr)
      call complete(req, .false., 'allreduce user op')
    case (F_PERSISTENT)
      call MPI_Type_dup(ptype, t, ierr)
      call MPI_Type_commit(t, ierr)
      pair_op_type = t
      call PINIT(Allreduce)(sb, rb, n, t, op, comm, MPI_INFO_NULL, req, ierr)
      call MPI_Op_free(op, ierr)
      call ok('MPI_OP_FREE of a user op a persistent request holds')
      call MPI_Type_free(t, ierr)
      call run_persistent(req, 'allreduce user op')
    case default
      call MPI_Allreduce(sb, rb, n, t, op, comm, ierr)
    end select
    call ok(trim(coll)//' user op')
    if (receives) call check_ints(reshape(rb, [2*n]), reshape(want, [2*n]), trim(coll)//' user op '//form_names(form))
    call served(trim(coll), form)
    if (form /= F_PERSISTENT) call MPI_Op_free(op, ierr)
    call ok('MPI_OP_FREE')
    call check(pair_op_bad_type == 0, 'the user op was not given its datatype''s Fortran handle')
  end subroutine

  ! ---- Allreduce on the Fortran datatypes ---------------------------------------------------
  subroutine t_fortran_types()
    integer, parameter :: n = 33
    double precision :: d(n), dr(n)
    real :: s(n), sr(n)
    complex :: c(n), cr(n)
    double complex :: z(n), zr(n)
    logical :: l(n), la(n), lo(n), lx(n)
    integer(kind=8) :: i8(n), i8r(n)
    integer(kind=2) :: i2(n), i2r(n)
    double precision :: dp(2, n), dpr(2, n)
    real :: rp(2, n), rpr(2, n)
    integer :: i, r, nt
    character(len=2) :: tag
    nt = np*(np - 1)/2
    do i = 1, n
      d(i) = me + 0.5d0*i
      s(i) = real(mod(me*5 + i, 7))
      c(i) = cmplx(me, -i)
      z(i) = dcmplx(2*me, i)
      l(i) = mod(me + i, 3) /= 0
      i8(i) = int(me, 8)*4000000000_8 + i
      i2(i) = int(mod(me*3 + i, 11), 2)
      dp(1, i) = mod(me*7 + i, 5)
      dp(2, i) = me
      rp(1, i) = mod(me*3 + i, 4)
      rp(2, i) = me
    end do
    call MPI_Allreduce(d, dr, n, MPI_DOUBLE_PRECISION, MPI_SUM, comm, ierr)
    call check(all(dr == [(nt + np*0.5d0*i, i=1, n)]), 'allreduce DOUBLE PRECISION sum')
    call served('allreduce', F_BLOCK)
    call MPI_Allreduce(s, sr, n, MPI_REAL, MPI_MAX, comm, ierr)
    call check(all(sr == [(maxval([(real(mod(r*5 + i, 7)), r=0, np - 1)]), i=1, n)]), 'allreduce REAL max')
    call served('allreduce', F_BLOCK)
    call MPI_Allreduce(c, cr, n, MPI_COMPLEX, MPI_SUM, comm, ierr)
    call check(all(cr == [(cmplx(nt, -np*i), i=1, n)]), 'allreduce COMPLEX sum')
    call served('allreduce', F_BLOCK)
    call MPI_Allreduce(z, zr, n, MPI_DOUBLE_COMPLEX, MPI_PROD, comm, ierr)
    call check(all(abs(zr - [(product([(dcmplx(2*r, i), r=0, np - 1)]), i=1, n)]) < 1d-6*abs(zr) + 1d-12), &
               'allreduce DOUBLE COMPLEX prod')
    call served('allreduce', F_BLOCK)
    call MPI_Allreduce(l, la, n, MPI_LOGICAL, MPI_LAND, comm, ierr)
    call MPI_Allreduce(l, lo, n, MPI_LOGICAL, MPI_LOR, comm, ierr)
    call MPI_Allreduce(l, lx, n, MPI_LOGICAL, MPI_LXOR, comm, ierr)
    do i = 1, n
      write (tag, '(i2)') i
      call check(la(i) .eqv. all([(mod(r + i, 3) /= 0, r=0, np - 1)]), 'allreduce LOGICAL land '//tag)
      call check(lo(i) .eqv. any([(mod(r + i, 3) /= 0, r=0, np - 1)]), 'allreduce LOGICAL lor '//tag)
      call check(lx(i) .eqv. mod(count([(mod(r + i, 3) /= 0, r=0, np - 1)]), 2) == 1, 'allreduce LOGICAL lxor '//tag)
    end do
    call served('allreduce', F_BLOCK)
    call MPI_Allreduce(i8, i8r, n, MPI_INTEGER8, MPI_SUM, comm, ierr)
    call check(all(i8r == [(int(nt, 8)*4000000000_8 + np*i, i=1, n)]), 'allreduce INTEGER8 sum')
    call served('allreduce', F_BLOCK)
    call MPI_Allreduce(i2, i2r, n, MPI_INTEGER2, MPI_MIN, comm, ierr)
    call check(all(i2r == [(minval([(int(mod(r*3 + i, 11), 2), r=0, np - 1)]), i=1, n)]), 'allreduce INTEGER2 min')
    call served('allreduce', F_BLOCK)
    call MPI_Allreduce(dp, dpr, n, MPI_2DOUBLE_PRECISION, MPI_MINLOC, comm, ierr)
    call MPI_Allreduce(rp, rpr, n, MPI_2REAL, MPI_MAXLOC, comm, ierr)
    do i = 1, n
      call check(dpr(1, i) == minval([(dble(mod(r*7 + i, 5)), r=0, np - 1)]), 'allreduce 2DOUBLE_PRECISION minloc value')
      call check(dpr(2, i) == dble(findloc([(mod(r*7 + i, 5), r=0, np - 1)], int(dpr(1, i)), 1) - 1), &
                 'allreduce 2DOUBLE_PRECISION minloc index')
      call check(rpr(1, i) == maxval([(real(mod(r*3 + i, 4)), r=0, np - 1)]), 'allreduce 2REAL maxloc value')
      call check(rpr(2, i) == real(findloc([(mod(r*3 + i, 4), r=0, np - 1)], int(rpr(1, i)), 1) - 1), &
                 'allreduce 2REAL maxloc index')
    end do
    call served('allreduce', F_BLOCK)
  end subroutine

  ! ---- MPI_BOTTOM: a buffer given by an absolute address in the datatype -------------------
  subroutine t_bottom()
    integer, parameter :: n = 40
    integer :: buf(n), want(n), lens(1), i
    integer(kind=MPI_ADDRESS_KIND) :: addr(1)
    HANDLE(MPI_Datatype) :: abstype
    buf = GAP
    want = [(val(0, n + 1 - i), i=1, n)]
    if (me == 0) buf = want
    call MPI_Get_address(buf, addr(1), ierr)
    lens(1) = n
    call MPI_Type_create_hindexed(1, lens, addr, MPI_INTEGER, abstype, ierr)
    call MPI_Type_commit(abstype, ierr)
    call MPI_Bcast(MPI_BOTTOM, 1, abstype, 0, comm, ierr)
    call ok('bcast MPI_BOTTOM')
    call check_ints(buf, want, 'bcast MPI_BOTTOM')
    call served('bcast', F_DERIVED)
    call MPI_Type_free(abstype, ierr)
  end subroutine

  ! MPI_BOTTOM with absolute addresses as Neighbor_alltoallw's (MPI_ADDRESS_KIND) displacements
  ! and plain INTEGERs, on rank 0 alone (a valid call nodecoll once judged invalid on that rank
  ! alone, which then waited in the host's call for peers waiting in nodecoll).
  subroutine t_bottom_displacements()
    integer, parameter :: k = 2
    integer :: nin, nout, j, i
    integer :: sources(np), dests(np), scounts(np), rcounts(np)
    integer, target :: sb(k*np), rb(k*np)
    integer :: want(k*np)
    integer(kind=MPI_ADDRESS_KIND) :: sd(np), rd(np), extent
    logical :: weighted
    HANDLE(MPI_Datatype) :: types(np)
    call MPI_Dist_graph_neighbors_count(gcomm, nin, nout, weighted, ierr)
    call MPI_Dist_graph_neighbors(gcomm, nin, sources, MPI_UNWEIGHTED, nout, dests, MPI_UNWEIGHTED, ierr)
    call integer_extent(extent)
    do j = 1, nout
      sb(k*(j - 1) + 1:k*j) = [(val(me, dests(j)*10 + i), i=1, k)]
    end do
    rb = GAP
    do j = 1, nin
      want(k*(j - 1) + 1:k*j) = [(val(sources(j), me*10 + i), i=1, k)]
    end do
    scounts = k
    rcounts = k
    types = MPI_INTEGER
    do j = 1, np
      if (me == 0) then
        call MPI_Get_address(sb(k*(j - 1) + 1), sd(j), ierr)
        call MPI_Get_address(rb(k*(j - 1) + 1), rd(j), ierr)
      else
        sd(j) = k*(j - 1)*extent
        rd(j) = k*(j - 1)*extent
      end if
    end do
    if (me == 0) then
      call MPI_Neighbor_alltoallw(MPI_BOTTOM, scounts, sd, types, MPI_BOTTOM, rcounts, rd, types, gcomm, ierr)
    else
      call MPI_Neighbor_alltoallw(sb, scounts, sd, types, rb, rcounts, rd, types, gcomm, ierr)
    end if
    call ok('neighbor_alltoallw MPI_BOTTOM')
    call check_ints(rb(1:k*nin), want(1:k*nin), 'neighbor_alltoallw MPI_BOTTOM')
    call served('neighbor_alltoallw', F_BLOCK)
  end subroutine

#if NC_BINDING == 3
  ! A strided array section as the buffer of rank 0 alone: MPICH's mpi_f08 binding describes it
  ! with a datatype it commits and frees itself through PMPI_ (nodecoll once took that type
  ! for uncommitted on that rank alone), also around a nonblocking call whose request outlives
  ! the type (a type made meanwhile may take its handle).  (MPICH 4.0.2's binding gets a
  ! section wrong in a nonblocking reduction, with or without nodecoll: not tested.)
  subroutine t_sections()
    integer, parameter :: n = 10
    integer :: a(2*n), b(n), want(n), i, round
    HANDLE(MPI_Request) :: req
    HANDLE(MPI_Datatype) :: other
    do round = 1, 3
      a = [(val(me, i + round), i=1, 2*n)]
      want = [(val(0, 2*i - 1 + round), i=1, n)]
      b = GAP
      if (me == 0) then
        call MPI_Bcast(a(1:2*n:2), n, MPI_INTEGER, 0, comm, ierr)
        b = a(1:2*n:2)
      else
        call MPI_Bcast(b, n, MPI_INTEGER, 0, comm, ierr)
      end if
      call ok('bcast of a section')
      call check_ints(b, want, 'bcast of a section')
      call served('bcast', F_DERIVED)
      b = GAP
      if (me == 0) then
        call MPI_Ibcast(a(1:2*n:2), n, MPI_INTEGER, 0, comm, req, ierr)
        b = want
      else
        call MPI_Ibcast(b, n, MPI_INTEGER, 0, comm, req, ierr)
      end if
      call MPI_Type_contiguous(3, MPI_INTEGER, other, ierr)
      call MPI_Type_commit(other, ierr)
      call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
      call ok('ibcast of a section')
      call check_ints(b, want, 'ibcast of a section')
      call served('bcast', F_NONBLOCKING)
      call MPI_Type_free(other, ierr)
    end do
  end subroutine
#endif

  ! ---- the point-to-point calls nodecoll makes progress (with a nonblocking Barrier pending) -
  subroutine t_p2p()
    integer :: right, left, x(3), y(3), cnt
    logical :: flag
    HANDLE(MPI_Request) :: req, req_sent
    HANDLE(MPI_Message) :: msg
    STATUS_VAR(st)
    right = mod(me + 1, np)
    left = mod(me + np - 1, np)
    call MPI_Ibarrier(comm, req, ierr)
    x = [me, 2*me, 3*me]
    y = -1
    call MPI_Sendrecv(x, 3, MPI_INTEGER, right, 11, y, 3, MPI_INTEGER, left, 11, comm, st, ierr)
    call check(all(y == [left, 2*left, 3*left]) .and. SOURCE_OF(st) == left .and. TAG_OF(st) == 11, 'MPI_SENDRECV')
    call MPI_Get_count(st, MPI_INTEGER, cnt, ierr)
    call check(cnt == 3, 'MPI_SENDRECV status count')
    ! a ring of Send/Ssend and Probe + Recv, Iprobe, Mprobe + Mrecv, Improbe + Mrecv (even
    ! ranks send first; a single rank talks to itself through Sendrecv only)
    if (np > 1) then
      if (mod(me, 2) == 0) call MPI_Send(x, 3, MPI_INTEGER, right, 12, comm, ierr)
      call MPI_Probe(left, 12, comm, st, ierr)
      call check(SOURCE_OF(st) == left .and. TAG_OF(st) == 12, 'MPI_PROBE status')
      call MPI_Recv(y, 3, MPI_INTEGER, left, 12, comm, MPI_STATUS_IGNORE, ierr)
      call check(all(y == [left, 2*left, 3*left]), 'MPI_SEND/MPI_RECV')
      if (mod(me, 2) == 1) call MPI_Send(x, 3, MPI_INTEGER, right, 12, comm, ierr)
      ! Ssend would wait for its receive: sent from a nonblocking call's side instead
      call MPI_Isend(x, 3, MPI_INTEGER, right, 13, comm, req_sent, ierr)
      flag = .false.
      do while (.not. flag)
        call MPI_Iprobe(left, 13, comm, flag, st, ierr)
      end do
      call MPI_Mprobe(left, 13, comm, msg, st, ierr)
      call MPI_Mrecv(y, 3, MPI_INTEGER, msg, st, ierr)
      call check(all(y == [left, 2*left, 3*left]) .and. TAG_OF(st) == 13, 'MPI_MPROBE/MPI_MRECV')
      call MPI_Wait(req_sent, MPI_STATUS_IGNORE, ierr)
      if (mod(me, 2) == 0) call MPI_Ssend(x, 3, MPI_INTEGER, right, 14, comm, ierr)
      flag = .false.
      do while (.not. flag)
        call MPI_Improbe(left, 14, comm, flag, msg, st, ierr)
      end do
      call MPI_Mrecv(y, 3, MPI_INTEGER, msg, MPI_STATUS_IGNORE, ierr)
      call check(all(y == [left, 2*left, 3*left]), 'MPI_IMPROBE/MPI_MRECV')
      if (mod(me, 2) == 1) call MPI_Ssend(x, 3, MPI_INTEGER, right, 14, comm, ierr)
    end if
    call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
    call ok('point-to-point')
    call served('barrier', F_NONBLOCKING)
  end subroutine

  ! ---- errors come back in ierror: the host's error class (MPI_ERRORS_RETURN) --------------
  subroutine t_errors()
    HANDLE(MPI_Comm) :: c
    integer :: x(4), y(4), cls, e
    integer(c_int64_t) :: before
    character(len=10) :: judge
    judge = merge('pmpi:args ', 'pmpi:size1', np > 1)
    call MPI_Comm_dup(comm, c, ierr)
    call MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN, ierr)
    x = 1
    ! (judged by nodecoll: counted as pmpi:args; on one rank the host judges it)
    if (.not. host_only) before = stat_calls('bcast'//c_null_char, trim(judge)//c_null_char)
    call MPI_Bcast(x, 4, MPI_INTEGER, np, c, e) ! (no such root)
    call check(e /= MPI_SUCCESS, 'bcast with an invalid root succeeded')
    call MPI_Error_class(e, cls, ierr)
    call check(cls == MPI_ERR_ROOT, 'bcast with an invalid root: not MPI_ERR_ROOT')
    if (.not. host_only) call check(stat_calls('bcast'//c_null_char, trim(judge)//c_null_char) == before + 1, &
                                    'bcast with an invalid root: not counted as '//judge)
    ! (not a negative count: MPICH 4.0.2 itself crashes on it)
    call MPI_Allreduce(x, y, 4, MPI_INTEGER, MPI_OP_NULL, c, e)
    call MPI_Error_class(e, cls, ierr)
    call check(e /= MPI_SUCCESS .and. cls == MPI_ERR_OP, 'allreduce with MPI_OP_NULL: not MPI_ERR_OP')
    call MPI_Allreduce(x, y, 4, MPI_INTEGER, MPI_SUM, c, e) ! (the communicator still works)
    call check(e == MPI_SUCCESS .and. all(y == np), 'allreduce after the errors')
    call MPI_Comm_free(c, ierr)
    call resync() ! (these calls' counters are no later check's business)
  end subroutine

  subroutine resync()
    integer :: k
    if (host_only) return
    do k = 1, size(colls)
      seen_total(k) = stat_calls(trim(colls(k))//c_null_char, '*'//c_null_char)
      seen_fallback(k) = stat_calls(trim(colls(k))//c_null_char, 'pmpi:*'//c_null_char)
    end do
  end subroutine

  ! ---- MPI_TYPE_FREE of a type a pending operation uses: the operation still has it ---------
  ! (nodecoll keeps the type until the request is freed.  Were the host to free it, a type
  ! made next could take its place, which shows where the type is used at every start: with
  ! NODECOLL_DTYPE_ENGINE=0, MPI_Pack fails or packs the wrong layout.)
  subroutine t_type_free()
    integer, parameter :: n = 300
    integer :: buf(2*n), want(2*n), k
    HANDLE(MPI_Datatype) :: t, other, base
    HANDLE(MPI_Request) :: req
    integer(kind=MPI_ADDRESS_KIND) :: lb, extent
    call MPI_Type_vector(2, 1, 2, MPI_INTEGER, base, ierr)
    lb = 0
    call integer_extent(extent)
    call MPI_Type_create_resized(base, lb, 4*extent, t, ierr)
    call MPI_Type_free(base, ierr)
    call MPI_Type_commit(t, ierr)
    call PINIT(Bcast)(buf, n/2, t, 0, comm, MPI_INFO_NULL, req, ierr)
    call ok('persistent bcast for MPI_TYPE_FREE')
    call MPI_Type_free(t, ierr)
    call ok('MPI_TYPE_FREE')
    call check(t == MPI_DATATYPE_NULL, 'MPI_TYPE_FREE left the handle')
    ! (a new type may take the freed one's place; the request must not see it)
    call MPI_Type_contiguous(3, MPI_INTEGER, other, ierr)
    call MPI_Type_commit(other, ierr)
    do k = 1, 2
      want = GAP
      call put(want, .true., 0, k, 0, n)
      buf = GAP
      if (me == 0) buf = want
      call MPI_Start(req, ierr)
      call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
      call ok('persistent bcast of a freed type')
      call check_ints(buf, want, 'persistent bcast of a freed type')
      if (np > 1 .or. k == 1) call served('bcast', F_PERSISTENT) ! (one rank: counted once, at the init)
    end do
    call MPI_Request_free(req, ierr)
    call MPI_Type_free(other, ierr)
  end subroutine

  subroutine integer_extent(extent)
    integer(kind=MPI_ADDRESS_KIND), intent(out) :: extent
    integer(kind=MPI_ADDRESS_KIND) :: lb
    call MPI_Type_get_extent(MPI_INTEGER, lb, extent, ierr)
  end subroutine

end module nc_ftest

program test_fortran
  use nc_ftest
  implicit none
  integer :: form, total
  integer(kind=MPI_ADDRESS_KIND) :: lb, extent
  HANDLE(MPI_Datatype) :: pair
  type(c_funptr) :: fn
  character(len=8) :: env

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, me, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  comm = MPI_COMM_WORLD
  call get_environment_variable('NODECOLL_TEST_HOST_ONLY', env)
  host_only = env == '1'
  fn = dlsym(c_null_ptr, 'nodecoll_stat_calls'//c_null_char)
  if (host_only .neqv. .not. c_associated(fn)) then
    print '(a)', 'FAIL: nodecoll must be preloaded, unless NODECOLL_TEST_HOST_ONLY=1 (then it must not be)'
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  if (.not. host_only) call c_f_procpointer(fn, stat_calls)
  call resync()

  call MPI_Type_vector(2, 1, 2, MPI_INTEGER, pair, ierr)
  lb = 0
  call integer_extent(extent)
  call MPI_Type_create_resized(pair, lb, 4*extent, gtype, ierr)
  call MPI_Type_free(pair, ierr)
  call MPI_Type_commit(gtype, ierr)
  call MPI_Type_contiguous(2, MPI_INTEGER, ptype, ierr)
  call MPI_Type_commit(ptype, ierr)
  call make_neighborhoods()

  do form = 1, NFORMS
    call t_barrier(form)
    call t_bcast(form)
    call t_gather(form, .false.)
    call t_gather(form, .true.)
    call t_gatherv(form, .false.)
    call t_gatherv(form, .true.)
    call t_scatter(form, .false.)
    call t_scatter(form, .true.)
    call t_alltoall(form)
    call t_alltoallv(form, .false.)
    call t_alltoallv(form, .true.)
    call t_reduce(form, 'reduce')
    call t_reduce(form, 'allreduce')
    call t_reduce(form, 'scan')
    call t_reduce(form, 'exscan')
    call t_reduce_scatter(form, .false.)
    call t_reduce_scatter(form, .true.)
    call t_user_op(form)
    call t_neighbor(form, 'neighbor_allgather')
    call t_neighbor(form, 'neighbor_allgatherv')
    call t_neighbor(form, 'neighbor_alltoall')
    call t_neighbor(form, 'neighbor_alltoallv')
    call t_neighbor(form, 'neighbor_alltoallw')
  end do
  call t_first_nonblocking()
  call t_fortran_types()
  call t_bottom()
  call t_bottom_displacements()
#if NC_BINDING == 3
  call t_sections()
#endif
  call t_p2p()
  call t_type_free()
  call t_errors()
  call MPI_Type_free(gtype, ierr)
  call MPI_Type_free(ptype, ierr)
  call MPI_Comm_free(gcomm, ierr)
  if (np >= 3) call MPI_Comm_free(ccomm, ierr)

  call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, comm, ierr)
  if (me == 0 .and. total == 0) print '(a,i0,a)', 'test_fortran: ok (', np, ' ranks)'
  if (me == 0 .and. total /= 0) print '(a,i0,a)', 'test_fortran: ', total, ' failures'
  call MPI_Finalize(ierr)
  if (total /= 0) stop 1
end program
