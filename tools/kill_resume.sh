#!/usr/bin/env bash
# Kills stored runs at random points and checks that resuming them loses and
# changes nothing (a crash at any point loses at most the work in flight). For
# `seam mutate`, `seam sweep` (--no-sweep leaves it out) and `seam diff` over a
# space (--no-diff leaves it out; left out under --mpi, diff runs as one process):
#   1. runs it uninterrupted into one store, noting T (its wall time) and B
#      (when its first row was stored: a campaign's baseline comes first);
#   2. runs it into a second store and SIGKILLs it after a random delay,
#      checks that store (PRAGMA integrity_check), resumes it with --resume
#      (a plain run when the kill came before the run was stored), kills that
#      too, and so on until KILLS kills have landed; then lets the last
#      resume finish. Each delay is uniform over the estimated length of that
#      resumed run, B + (T - B) x the share of the work still to do, so kills
#      land in startup, baseline, storing and finishing alike; a run that
#      ends before its kill point completes its store (compared like the
#      last one) and the next kill starts a new store;
#   3. compares each completed store with the uninterrupted one row for row
#      (mutate: every mutant's status, argument and cases run, every kill
#      with its first killing case, property, class, text and reproduce
#      line, the stored baseline row in one process; sweep and diff: every
#      case row with its plan hash and every verdict) and the two runs'
#      output (the last line included) without timing lines.
# Then KILLS runs are killed while they create a new store (at 0-29 ms,
# where a run opens a new file and commits its schema): the next run on
# each must open it and finish.
# With --mpi N (tools/mpi_kill_resume.sh) every run is `mpirun -np N seam`
# (each rank one worker thread): the uninterrupted run and every fresh start
# use N ranks, the resumes cycle through N, N + 1 and one plain process (a
# run may be resumed with another N); a kill SIGKILLs mpirun and every rank
# at once (the whole session), or every other time one rank alone, chosen at
# random, which mpirun answers by ending the others; either way no process
# of the run is left when the next starts. The store-creation kills are left
# out (mpirun's own start takes longer than the window).
# --quick sweeps world 4, mutates at worlds 1, 2, 4, 8 and diffs at worlds 1,
# 2 (instead of 16, 1-16 and 1, 2, 4; tools/test.sh runs it so, unless SEAM_SLOW=1); --no-build uses the binaries in
# $SEAM_BUILD (default build/) as they are, without tools/setup.sh (ctest
# runs it so).
# Delays come from a 31-bit LCG seeded with --seed (printed; it replays them).
#   tools/kill_resume.sh [--seed N] [--kills K] [--no-sweep] [--no-diff] [--mpi N] [--quick] [--no-build]
# Exit 0 when every store and output compared is identical and every run
# after a kill in store creation succeeded; 1 otherwise (with the
# difference and the seed); 2 on usage.
# The helpers (launching, killing, comparing) are in kill_resume_lib.sh.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${SEAM_BUILD:-$root/build}"
seed=$(( $(date +%s%N) / 1000 % 1000000 ))
kills=20
sweep=1
diff=1
np=1
quick=0
build_first=1
while (($#)); do
  case "$1" in
    --seed) [[ "${2:-}" =~ ^[0-9]+$ ]] || { echo "kill_resume: --seed needs a number" >&2; exit 2; }; seed=$2; shift 2 ;;
    --kills) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || { echo "kill_resume: --kills needs a positive number" >&2; exit 2; }; kills=$2; shift 2 ;;
    --mpi) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || { echo "kill_resume: --mpi needs a number of ranks" >&2; exit 2; }; np=$2; shift 2 ;;
    --no-sweep) sweep=0; shift ;;
    --no-diff) diff=0; shift ;;
    --quick) quick=1; shift ;;
    --no-build) build_first=0; shift ;;
    *) echo "kill_resume: unknown option \"$1\" (--seed N, --kills K, --no-sweep, --no-diff, --mpi N, --quick, --no-build)" >&2; exit 2 ;;
  esac
done

((build_first)) && "$root/tools/setup.sh" "$build" >/dev/null
seam="$build/tools/seam"
[[ -x "$seam" ]] || { echo "kill_resume: no seam binary at $seam (build it, or leave out --no-build)" >&2; exit 2; }
if ((np > 1)); then
  mpirun=$(command -v mpirun) || { echo "kill_resume: --mpi needs mpirun (tools/setup.sh installs Open MPI)" >&2; exit 2; }
  # As tests/tools/mpi_cli_test.cc: shared memory between local ranks, no
  # ptrace single copy, the launcher on loopback, PMIx without shm locks.
  export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
  export OMPI_MCA_oob_tcp_if_include=lo PMIX_MCA_gds=hash
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/seam-kill-resume.XXXXXX")"
trap 'rm -rf "$work"' EXIT

state=$seed
# shellcheck source=tools/kill_resume_lib.sh
source "$root/tools/kill_resume_lib.sh"

failed=0
fail() { echo "kill_resume $1 (seed $seed)" >&2; failed=1; }

# resume_check NAME "ARGS"
resume_check() {
  local name=$1 args=$2
  local whole="$work/$name-whole.db" t0 first=0 total_ms total_cost
  # 1. Uninterrupted, noting when the first row arrives.
  t0=$(now_ms)
  # shellcheck disable=SC2086
  launch "$np" $args --db "$whole" >"$work/$name-whole.out" 2>"$work/$name-whole.err"
  while kill -0 "$pid" 2>/dev/null; do
    if ((first == 0)) && (($("rows_$name" "$whole") > 0)); then first=$(( $(now_ms) - t0 )); fi
    sleep 0.02
  done
  verdict_wait "$pid" || { fail "$name: the uninterrupted run failed: $(tail -1 "$work/$name-whole.err")"; return; }
  total_ms=$(( $(now_ms) - t0 ))
  ((first > 0)) || first=$total_ms
  total_cost=$("cost_$name" "$whole")
  echo "kill_resume $name: seam $args (np $np): uninterrupted ${total_ms} ms (first row at ${first} ms), $("rows_$name" "$whole") rows"

  # 2. Killed and resumed until KILLS kills have landed; a run that finishes
  # before its kill point completes that store, which is compared, and the
  # next kill starts a new one. Under mpirun the resumes cycle through np,
  # np + 1 and one plain process.
  local landed=0 stores=1 cut="$work/$name-cut1.db" points=() done_cost span delay resume=() integrity ranks
  local resumes=0 sizes=("$np")
  ((np > 1)) && sizes+=($((np + 1)) 1)
  compared=0 reused=0
  while ((landed < kills)); do
    done_cost=$("cost_$name" "$cut")
    span=$(( first + (total_ms - first) * (total_cost - done_cost) / total_cost ))
    ((span > 1)) || span=1
    next_random
    delay=$(( state % span ))
    ranks=$np
    if ((${#resume[@]})); then
      ranks=${sizes[resumes % ${#sizes[@]}]}
      resumes=$((resumes + 1))
    fi
    # shellcheck disable=SC2086
    launch "$ranks" $args --db "$cut" "${resume[@]}" >"$work/$name-cut.out" 2>"$work/$name-cut.err"
    sleep_ms "$delay"
    # (bash's "Killed" notice of the job goes nowhere)
    if stop "$ranks" 2>/dev/null; then
      wait "$pid" 2>/dev/null || true
      landed=$((landed + 1))
      points+=("${delay}ms@${done_cost}/${total_cost}${kill_note}")
      if [[ -s "$cut" ]]; then
        # Read-write, as the next run opens it: a kill can leave a hot journal
        # that any opener rolls back (a read-only open cannot).
        integrity=$(sqlite3 "$cut" "PRAGMA integrity_check" 2>&1 || true)
        [[ "$integrity" == ok ]] || { fail "$name: store damaged by kill $landed: $integrity"; return; }
      fi
      # Resume what the killed run had stored; start afresh when it had not
      # stored its run yet.
      (($(runs_in "$cut") > 0)) && resume=(--resume)
      if (($(finished_in "$cut") > 0)); then
        # Killed after it had finished its run (while printing).
        points[-1]+=":after-finish"
        compare "$name" "$whole" "$cut" - || return
      else
        continue
      fi
    else
      verdict_wait "$pid" || { fail "$name: a resumed run failed: $(tail -1 "$work/$name-cut.err")"; return; }
      points+=("${delay}ms@${done_cost}/${total_cost}:finished-first")
      compare "$name" "$whole" "$cut" "$work/$name-cut.out" || return
    fi
    stores=$((stores + 1))
    cut="$work/$name-cut$stores.db"
    resume=()
  done
  # The store the last kill left: resumed to the end.
  ranks=$np
  ((${#resume[@]})) && ranks=${sizes[resumes % ${#sizes[@]}]}
  # shellcheck disable=SC2086
  launch "$ranks" $args --db "$cut" "${resume[@]}" >"$work/$name-cut.out" 2>"$work/$name-cut.err"
  verdict_wait "$pid" || { fail "$name: the last resume failed: $(tail -1 "$work/$name-cut.err")"; return; }
  compare "$name" "$whole" "$cut" "$work/$name-cut.out" || return
  echo "kill_resume $name: kill points (delay@work stored before it; :finished-first = the run ended first):"
  echo "  ${points[*]}"
  echo "kill_resume $name: $landed kills over $stores store(s); all $compared store(s) and outputs identical to the uninterrupted run$( ((reused)) && echo " ($reused resumed on a stored baseline)"): $(tail -1 "$work/$name-cut.out")"
}

# create_check "ARGS": runs killed while they create a new store.
create_check() {
  local args=$1 db="$work/create.db" k delay landed=0 left=0
  for ((k = 0; k < kills; ++k)); do
    rm -f "$db" "$db-wal" "$db-shm" "$db-journal"
    next_random
    delay=$(( state % 30 ))
    # shellcheck disable=SC2086
    launch 1 $args --db "$db" >/dev/null 2>&1
    sleep_ms "$delay"
    stop 1 && landed=$((landed + 1))
    wait "$pid" 2>/dev/null || true
    [[ -e "$db-journal" ]] && left=$((left + 1))
    # shellcheck disable=SC2086
    "$seam" $args --db "$db" >/dev/null 2>"$work/create.err" || (($? == 1)) ||
      { fail "create: the run after kill $((k + 1)) (${delay} ms) failed: $(tail -1 "$work/create.err")"; return; }
  done
  echo "kill_resume create: $landed of $kills runs killed in their first 30 ms ($left left a journal behind); every next run opened the store and finished"
}

jobs=2 mutate_worlds=1,2,4,8,16 sweep_world=16 diff_worlds=1,2,4
((np > 1)) && jobs=1  # one worker a rank
((quick)) && mutate_worlds=1,2,4,8 sweep_world=4 diff_worlds=1,2
under=""
((np > 1)) && under=", under mpirun -np $np"
echo "kill_resume: seed $seed, $kills kills per run$under (tools/kill_resume.sh --seed $seed replays the delays)"
resume_check mutate "mutate --model nemotron-3-nano --world $mutate_worlds --jobs $jobs"
((sweep)) && resume_check sweep "sweep --world $sweep_world --jobs $jobs"
((diff && np == 1)) && resume_check diff "diff --world $diff_worlds --jobs $jobs"
((np == 1)) && create_check "sweep --pattern M-*E-M*E --world 8 --jobs 1"
exit "$failed"
