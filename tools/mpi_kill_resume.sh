#!/usr/bin/env bash
# tools/kill_resume.sh under `mpirun -np 2` (the MPI runs of seam sweep and
# seam mutate): `seam mutate` and `seam sweep` killed at random points, whole or one
# rank at a time, resumed under 2, 3 or 1 processes, each finished store and
# output compared with an uninterrupted `mpirun -np 2` run. Options as
# kill_resume.sh (--seed, --kills, --no-sweep, --quick, --no-build).
#   tools/mpi_kill_resume.sh [--seed N] [--kills K] [--quick] [--no-build] ...
exec "$(dirname "${BASH_SOURCE[0]}")/kill_resume.sh" --mpi 2 "$@"
