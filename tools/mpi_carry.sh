#!/usr/bin/env bash
# Gathers the Open MPI runtime this machine has (Debian 12's openmpi-bin and
# libpmix2, installed by tools/setup.sh) into one folder, so that a machine
# without MPI (the lent GPU machines) can run `mpirun -np N seam-gpu ...` on
# carried binaries. The folder is relocatable: source DIR/env.sh there (it
# sets OPAL_PREFIX, the PMIx prefix, PATH and LD_LIBRARY_PATH from its own
# place). Shared libraries the runtime needs are copied too, except the C
# library's own, which every Linux has.
# Usage: tools/mpi_carry.sh DIR
set -euo pipefail
dir="${1:?usage: tools/mpi_carry.sh DIR}"
arch=x86_64-linux-gnu
rm -rf "$dir"
mkdir -p "$dir/bin" "$dir/lib/openmpi3" "$dir/share/openmpi" "$dir/etc" "$dir/pmix2/lib/pmix" "$dir/pmix2/share"
cp -L /usr/bin/orterun "$dir/bin/mpirun"
cp -L /usr/bin/orted /usr/bin/ompi_info "$dir/bin/"
cp -a /usr/lib/$arch/libmpi.so.40* /usr/lib/$arch/libopen-pal.so.40* /usr/lib/$arch/libopen-rte.so.40* \
  /usr/lib/$arch/libmca_common_*.so.* "$dir/lib/"
cp -a /usr/lib/$arch/openmpi/lib/openmpi3/*.so "$dir/lib/openmpi3/"
cp -a /usr/share/openmpi/. "$dir/share/openmpi/"
cp -a /etc/openmpi/. "$dir/etc/"
cp -a /usr/lib/$arch/pmix2/lib/libpmix.so.2* "$dir/lib/"
cp -a /usr/lib/$arch/pmix2/lib/pmix/*.so "$dir/pmix2/lib/pmix/"
cp -a /usr/lib/$arch/pmix2/share/. "$dir/pmix2/share/"

# Every library these need, transitively, but the C library's, into deps/:
# env.sh puts on the path only those the other machine lacks (its own zlib,
# hwloc, libevent... stay in use where it has them).
mkdir -p "$dir/deps"
system='^(linux-vdso|libc|libm|libdl|libpthread|librt|ld-linux-x86-64|libresolv|libutil)\.so'
for round in 1 2 3; do
  for f in "$dir"/bin/* "$dir"/lib/*.so* "$dir"/lib/openmpi3/*.so "$dir"/pmix2/lib/pmix/*.so "$dir"/deps/*; do
    [[ -e "$f" ]] || continue
    LD_LIBRARY_PATH="$dir/lib:$dir/deps" ldd "$f" 2>/dev/null | awk '/=> \// {print $1, $3}'
  done | sort -u | while read -r name path; do
    [[ "$name" =~ $system ]] && continue
    [[ -e "$dir/lib/$name" || -e "$dir/deps/$name" ]] || cp -L "$path" "$dir/deps/$name"
  done
done

cat >"$dir/env.sh" <<'ENV'
# Sourced on the machine that runs the carried Open MPI: everything relative
# to this folder; deps/ fills in the libraries that machine lacks.
mpi_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export OPAL_PREFIX="$mpi_dir" OPAL_LIBDIR="$mpi_dir/lib" OPAL_PKGLIBDIR="$mpi_dir/lib/openmpi3"
export OPAL_DATADIR="$mpi_dir/share" OPAL_PKGDATADIR="$mpi_dir/share/openmpi" OPAL_SYSCONFDIR="$mpi_dir/etc"
export PMIX_PREFIX="$mpi_dir/pmix2" PMIX_LIBDIR="$mpi_dir/pmix2/lib" PMIX_PKGLIBDIR="$mpi_dir/pmix2/lib/pmix"
export PMIX_DATADIR="$mpi_dir/pmix2/share" PMIX_PKGDATADIR="$mpi_dir/pmix2/share/pmix"
rm -rf "$mpi_dir/missing" && mkdir -p "$mpi_dir/missing"
for f in "$mpi_dir"/deps/*; do
  ldconfig -p | grep -q "^[[:space:]]$(basename "$f") " || ln -s "$f" "$mpi_dir/missing/"
done
export PATH="$mpi_dir/bin:$PATH"
export LD_LIBRARY_PATH="$mpi_dir/lib:$mpi_dir/missing${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# One host, no network needed: shared memory between the local ranks.
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_pml=ob1
export OMPI_MCA_oob_tcp_if_include=lo PMIX_MCA_gds=hash
export HWLOC_PLUGINS_PATH="$mpi_dir/no-hwloc-plugins"
ENV
du -sh "$dir" | awk '{print "mpi_carry: " $1 " in " $2}'
