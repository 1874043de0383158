! Fortran callers reach MPI-4's large-count collectives through the host's mpi_f08 binding:
! MPICH 4's passes INTEGER(KIND=MPI_COUNT_KIND) counts and INTEGER(KIND=MPI_ADDRESS_KIND)
! displacements on to the C functions MPI_Bcast_c, MPI_Allreduce_c, MPI_Gatherv_c, ... (its
! libmpichfort calls them by their MPI_ names), which nodecoll serves.  Run with nodecoll
! preloaded: every result is compared with what each rank computes for itself, and nodecoll's
! counters must show it served every call (nothing counted as the host's).  The neighbourhood
! collectives' _c forms likewise, on a complete distributed graph (where they mean what
! Allgatherv and Alltoallv do).
program test_large_count_f08
  use mpi_f08
  use iso_c_binding
  implicit none
#include "nodecoll_counters.inc"
  character(len=19), parameter :: colls(8) = [character(len=19) :: 'bcast', 'allreduce', 'gatherv', &
    'allgatherv', 'alltoallv', 'neighbor_allgatherv', 'neighbor_alltoallv', 'neighbor_alltoallw']
  integer, parameter :: n0 = 3000
  integer(kind=MPI_COUNT_KIND) :: n, counts(0:15), rcounts(0:15), scount
  integer(kind=MPI_ADDRESS_KIND) :: displs(0:15), rdispls(0:15)
  double precision, allocatable :: a(:), b(:)
  integer, allocatable :: s(:), r(:)
  type(MPI_Request) :: req
  type(MPI_Comm) :: graph
  type(MPI_Datatype) :: types(0:15)
  type(c_funptr) :: fn
  integer :: me, np, i, q, failures = 0, total, ranks(0:15), isize

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, me)
  call MPI_Comm_size(MPI_COMM_WORLD, np)
  fn = dlsym(c_null_ptr, 'nodecoll_stat_calls'//c_null_char)
  if (.not. c_associated(fn)) then
    print '(a)', 'FAIL: nodecoll must be preloaded'
    call MPI_Abort(MPI_COMM_WORLD, 1)
  end if
  call c_f_procpointer(fn, stat_calls)
  call MPI_Barrier(MPI_COMM_WORLD) ! (sets the communicator up: nonblocking calls need it)

  n = n0
  allocate(a(n0), b(n0))
  ! Bcast from the last rank
  a = 0
  if (me == np - 1) a = [(dble(i), i = 1, n0)]
  call MPI_Bcast(a, n, MPI_DOUBLE_PRECISION, np - 1, MPI_COMM_WORLD)
  call check(all(a == [(dble(i), i = 1, n0)]), 'MPI_Bcast with an MPI_COUNT_KIND count')
  ! Allreduce, then a nonblocking one in place
  a = [(dble(i + me), i = 1, n0)]
  call MPI_Allreduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  call check(all(b == [(dble(np * i + np * (np - 1) / 2), i = 1, n0)]), 'MPI_Allreduce')
  call MPI_Iallreduce(MPI_IN_PLACE, a, n, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, req)
  call MPI_Wait(req, MPI_STATUS_IGNORE)
  call check(all(a == [(dble(i + np - 1), i = 1, n0)]), 'MPI_Iallreduce in place')

  ! Gatherv and Allgatherv: rank q's q + 1 INTEGERs, blocks in reverse rank order, one gap each
  total = np * (np + 1) / 2 + np
  allocate(s(me + 1), r(total))
  s = [(1000 * me + i, i = 1, me + 1)]
  call reverse_blocks(counts, displs)
  scount = me + 1
  r = -1
  call MPI_Gatherv(s, scount, MPI_INTEGER, r, counts, displs, MPI_INTEGER, 0, MPI_COMM_WORLD)
  if (me == 0) call check(placed(r), 'MPI_Gatherv with MPI_ADDRESS_KIND displacements')
  r = -1
  call MPI_Allgatherv(s, scount, MPI_INTEGER, r, counts, displs, MPI_INTEGER, MPI_COMM_WORLD)
  call check(placed(r), 'MPI_Allgatherv')
  ! Alltoallv: the same block to everyone, gathered alike
  deallocate(s)
  allocate(s(np * (me + 1)))
  s = [((1000 * me + i, i = 1, me + 1), q = 1, np)]
  counts(0:np - 1) = me + 1
  displs(0:np - 1) = [(q * (me + 1), q = 0, np - 1)]
  r = -1
  call reverse_blocks(rcounts, rdispls)
  call MPI_Alltoallv(s, counts, displs, MPI_INTEGER, r, rcounts, rdispls, MPI_INTEGER, MPI_COMM_WORLD)
  call check(placed(r), 'MPI_Alltoallv')

  ! The neighbourhood collectives on the complete graph, every rank a neighbour of every rank
  ! (itself too) in rank order: the same blocks land in the same places
  ranks(0:np - 1) = [(q, q = 0, np - 1)]
  call MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, np, ranks, MPI_UNWEIGHTED, np, ranks, MPI_UNWEIGHTED, &
                                      MPI_INFO_NULL, .false., graph)
  call MPI_Barrier(graph)
  r = -1
  call MPI_Neighbor_allgatherv(s, scount, MPI_INTEGER, r, rcounts, rdispls, MPI_INTEGER, graph)
  call check(placed(r), 'MPI_Neighbor_allgatherv')
  r = -1
  call MPI_Neighbor_alltoallv(s, counts, displs, MPI_INTEGER, r, rcounts, rdispls, MPI_INTEGER, graph)
  call check(placed(r), 'MPI_Neighbor_alltoallv')
  ! nonblocking, displacements in bytes
  call MPI_Type_size(MPI_INTEGER, isize)
  types = MPI_INTEGER
  r = -1
  call MPI_Ineighbor_alltoallw(s, counts, isize * displs, types, r, rcounts, isize * rdispls, types, graph, req)
  call MPI_Wait(req, MPI_STATUS_IGNORE)
  call check(placed(r), 'MPI_Ineighbor_alltoallw')
  call MPI_Comm_free(graph)

  if (np > 1) then
    do i = 1, size(colls)
      call check(stat_calls(trim(colls(i))//c_null_char, 'pmpi:*'//c_null_char) == 0, &
                 trim(colls(i))//': calls went to the host')
      call check(stat_calls(trim(colls(i))//c_null_char, '*'//c_null_char) > 0, &
                 trim(colls(i))//': nodecoll served none')
    end do
  end if
  call MPI_Allreduce(MPI_IN_PLACE, failures, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (me == 0) then
    if (failures == 0) then
      print '(a,i0,a)', 'test_large_count_f08: passed (', np, ' ranks)'
    else
      print '(a,i0,a)', 'test_large_count_f08: FAILED (', np, ' ranks)'
    end if
  end if
  call MPI_Finalize()
  if (failures /= 0) stop 1

contains

  ! Rank q's q + 1 elements, blocks in reverse rank order with a gap of one after each.
  subroutine reverse_blocks(counts, displs)
    integer(kind=MPI_COUNT_KIND), intent(out) :: counts(0:)
    integer(kind=MPI_ADDRESS_KIND), intent(out) :: displs(0:)
    integer :: q, at
    at = 0
    do q = np - 1, 0, -1
      counts(q) = q + 1
      displs(q) = at
      at = at + q + 2
    end do
  end subroutine

  ! Every rank's block where reverse_blocks puts it, the gaps untouched.
  logical function placed(got)
    integer, intent(in) :: got(:)
    integer :: q, i, at
    placed = .true.
    at = 0
    do q = np - 1, 0, -1
      do i = 1, q + 1
        placed = placed .and. got(at + i) == 1000 * q + i
      end do
      placed = placed .and. got(at + q + 2) == -1
      at = at + q + 2
    end do
  end function

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (ok) return
    print '(a,i0,2a)', 'FAIL [rank ', me, ']: ', what
    failures = failures + 1
  end subroutine

end program
