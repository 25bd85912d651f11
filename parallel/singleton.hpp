#pragma once
// How a process that no MPI launcher started (an MPI "singleton": `tessera run` typed
// alone, a test binary) starts MPI.
#include <string>

namespace tessera::parallel {

/// True where an MPI launcher (mpirun, srun, a PMI/PMIx server) started this process.
bool launched_by_mpi();

/// Call before MPI_Init. Where no launcher started this process and the environment has
/// TESSERA_MPI_SINGLETON=isolated, Open MPI 4 is told to run the singleton without the
/// daemon (orted) it otherwise forks in MPI_Init (ess_singleton_isolated: a one-step Sod
/// run 0.20 s -> 0.10 s here with pml=ob1), in a session directory of its own: a fresh directory
/// under $TMPDIR (or /tmp), tessera-mpi-<pid>-XXXXXX, as orte_tmpdir_base, removed when the process
/// exits (and, where a process was killed, by the next one whose pid is gone). Isolated singletons
/// would otherwise all share one session directory (.../jf.0/1), and one's MPI_Finalize removes it
/// under another's MPI-IO file (seen: `mca_sharedfp_sm_file_open
/// ... unable to open file`, then H5Fcreate failed). The tests set the variable
/// (tests/CMakeLists.txt); other MPI libraries ignore the OMPI_MCA_ variables it sets.
/// Returns the session base directory made, or "" where nothing was changed. A failure to
/// make the directory leaves the environment as it was (the default singleton).
std::string prepare_singleton();

}  // namespace tessera::parallel
