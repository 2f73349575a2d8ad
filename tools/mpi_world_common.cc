// What both builds of mpi_world share: reading the launcher's environment.
#include <cstdlib>

#include "mpi_world.h"

namespace seam::tools {

bool launchedAsOneOfSeveral() {
  // Open MPI's mpirun; PMIx launchers (srun, prterun); MPICH's Hydra.
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"}) {
    const char* v = std::getenv(var);
    if (v != nullptr && std::atoi(v) > 1) return true;
  }
  return false;
}

}  // namespace seam::tools
