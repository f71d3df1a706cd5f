# Sourced by the tests/mpi scripts, so each MPI's compiler and launcher are named once.
# mpi_tools ompi|mpich sets mpi_cc and mpi_run (the launcher up to -np: the rank count follows);
# it fails for any other name. Open MPI needs leave to run as root (CI is root) and to place more
# ranks than this machine's two cores.
mpi_tools() {
  case $1 in
    ompi)
      mpi_cc=mpicc.openmpi
      mpi_run=(mpirun.openmpi --allow-run-as-root --oversubscribe -np)
      ;;
    mpich)
      mpi_cc=mpicc.mpich
      mpi_run=(mpirun.mpich -np)
      ;;
    *) return 1 ;;
  esac
}
