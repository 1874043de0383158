! Time a Fortran MPI_ALLREDUCE (DOUBLE PRECISION, MPI_SUM) of 8 B and 1 MiB, as a Fortran
! program calls it: run it with and without nodecoll preloaded and compare (docs/results-fortran.md
! gives the commands).  -DNC_F08 for `use mpi_f08`, else `use mpi`.
!
!   mpif90.openmpi -O2 -cpp [-DNC_F08] -o fortran_allreduce tools/bench/fortran_allreduce.F90
!   mpirun -np 2 ./fortran_allreduce [repetitions]
!
! Each repetition times a loop of calls between two barriers; a rank's time per call is the
! loop's time / calls, and a repetition's figure is the slowest rank's.  Printed: the median
! and the best repetition, in microseconds per call.
program fortran_allreduce
#ifdef NC_F08
  use mpi_f08
#else
  use mpi
#endif
  implicit none
  integer, parameter :: nsizes = 2, counts(nsizes) = [1, 131072], calls(nsizes) = [20000, 200]
  double precision, allocatable :: a(:), b(:), times(:)
  double precision :: t0, t(1), worst(1) ! (arrays: `use mpi` may have no interface to match)
  integer :: me, np, ierr, reps, s, r, i
  character(len=16) :: arg

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, me, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  reps = 21
  if (command_argument_count() > 0) then
    call get_command_argument(1, arg)
    read (arg, *) reps
  end if
  allocate (times(reps))
  do s = 1, nsizes
    allocate (a(counts(s)), b(counts(s)))
    a = me + 1
    do i = 1, calls(s)/10 + 1 ! (warm up)
      call MPI_Allreduce(a, b, counts(s), MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    end do
    do r = 1, reps
      call MPI_Barrier(MPI_COMM_WORLD, ierr)
      t0 = MPI_Wtime()
      do i = 1, calls(s)
        call MPI_Allreduce(a, b, counts(s), MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
      end do
      t(1) = (MPI_Wtime() - t0)/calls(s)
      call MPI_Allreduce(t, worst, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
      times(r) = worst(1)
    end do
    if (b(1) /= np*(np + 1)/2) print '(a)', 'fortran_allreduce: wrong result'
    call sort(times)
    if (me == 0) print '(a,i8,a,f10.3,a,f10.3,a,i0,a,i0,a)', 'allreduce ', 8*counts(s), ' B: median ', &
      1d6*times((reps + 1)/2), ' us, best ', 1d6*times(1), ' us (', reps, ' x ', calls(s), ' calls)'
    deallocate (a, b)
  end do
  call MPI_Finalize(ierr)

contains

  subroutine sort(x)
    double precision, intent(inout) :: x(:)
    integer :: j, k
    double precision :: v
    do j = 2, size(x)
      v = x(j)
      k = j - 1
      do while (k >= 1)
        if (x(k) <= v) exit
        x(k + 1) = x(k)
        k = k - 1
      end do
      x(k + 1) = v
    end do
  end subroutine

end program
