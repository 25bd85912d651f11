#pragma once
// How a process that no MPI launcher started (an MPI "singleton": `tessera run` typed
// alone, a test binary) starts MPI.
#include <string>

namespace tessera::parallel {

/// True where an MPI launcher (mpirun, mpiexec, srun) started this process: Open MPI,
/// MPICH's Hydra and Slurm's PMI/PMIx set these in every rank's environment.
bool launched_by_mpi();

/// Call before MPI_Init. Where no launcher started this process and the environment has
/// TESSERA_MPI_SINGLETON=isolated, Open MPI 4 is told to run the singleton without the
/// daemon (orted) it otherwise forks in MPI_Init (ess_singleton_isolated: a one-step Sod
/// run 0.20 s -> 0.10 s here with pml=ob1), in a session directory of its own
/// (orte_tmpdir_base): a fresh $TMPDIR/tessera-mpi-<host>-<pid>-XXXXXX (/tmp without
/// TMPDIR), removed when the process exits. Isolated singletons would otherwise all share
/// one session directory (.../jf.0/1), and one's MPI_Finalize removes it under another's
/// MPI-IO file (seen: `mca_sharedfp_sm_file_open ... unable to open file`, then H5Fcreate
/// failed). The directory of a process that was killed is removed by the next one on the
/// same host, where that pid is gone and nobody holds the lock its owner held on
/// <dir>/owner.lock. The tests set the variable (tests/CMakeLists.txt); other MPI
/// libraries ignore the OMPI_MCA_ variables it sets. Returns the directory made, or ""
/// where nothing was changed; where the directory cannot be made it says so on stderr and
/// leaves the environment as it was (Open MPI's default singleton).
std::string prepare_singleton();

}  // namespace tessera::parallel
