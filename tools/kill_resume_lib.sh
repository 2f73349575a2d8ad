#!/usr/bin/env bash
# The helpers tools/kill_resume.sh sources: a seeded random number, times,
# what a stored run is compared by (dump_NAME, stable_NAME, rows_NAME,
# cost_NAME for NAME mutate, sweep or diff), starting a run and SIGKILLing it
# (whole, or under mpirun one rank alone), and comparing a resumed store and
# its output with the uninterrupted run's. They use the caller's globals
# state (the LCG's), seam, np, mpirun and work; `launch` sets pid, `stop`
# kill_note, `compare` counts into compared and reports through the caller's
# fail (and into reused the outputs that say a stored baseline was taken).
# The per-command helpers are called by name.
# shellcheck disable=SC2317,SC2154

next_random() { state=$(( (state * 1103515245 + 12345) % 2147483648 )); }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
sleep_ms() { sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"; }
query() { sqlite3 -readonly "$1" "$2"; }

# What a run is compared by (each store holds one run).
# A campaign's stored baseline too (one process stores it; under mpirun no
# rank does, and a resume in one process would).
dump_mutate() {
  query "$1" "SELECT id, kind, status, argument, cases_run FROM mutants ORDER BY id;
              SELECT mutant_id, case_idx, property, violation_class, text, reproduce FROM kills ORDER BY mutant_id;
              SELECT count(*), sum(finished_ms > 0) FROM runs;"
  ((np > 1)) || query "$1" "SELECT space, version, seam_commit, cases, kept, refused, engine_findings,
                              hex(kept_cases), checksum FROM baselines;"
}
dump_sweep() {
  query "$1" "SELECT idx, model, pattern, config, flags, batch, policy, group_key, outcome, refusal, reproduce, plan_hash
                FROM cases ORDER BY idx;
              SELECT case_idx, property, seq, holds, violation_class, text FROM verdicts ORDER BY case_idx, property;
              SELECT count(*), sum(finished_ms > 0) FROM runs;"
}
# Output without what differs between runs by nature: wall times and rates,
# and the line only a resumed run prints. A sweep's rate column widens with
# its widest rate (a resumed run that reran a few cases of a model shows a
# huge one), which moves the header's words: runs of spaces count as one.
stable_mutate() { grep -v -e '^campaign took' -e '^took ' -e 'resumed' "$1" || true; }
stable_sweep() {
  grep -v -e '^checked ' -e 'resumed' "$1" |
    sed -E 's/^([^ ]+ +[0-9]+ +[0-9]+ +[0-9]+) .*/\1/; s/, [0-9.]+k? cases\/s$//; s/ +/ /g' || true
}
# A diff of a space stores its cases as a sweep does (no verdict rows), and
# prints no timing: only the line a resumed run adds is left out.
dump_diff() { dump_sweep "$1"; }
stable_diff() { grep -v 'resumed' "$1" || true; }
rows_mutate() { [[ -s "$1" ]] && query "$1" "SELECT count(*) FROM mutants" 2>/dev/null || echo 0; }
rows_sweep() { [[ -s "$1" ]] && query "$1" "SELECT count(*) FROM cases" 2>/dev/null || echo 0; }
# The work a store holds, in cases checked: a campaign's mutants differ a lot
# (a killed one stops at its first kill, an equivalent one runs every case).
cost_mutate() { [[ -s "$1" ]] && query "$1" "SELECT coalesce(sum(cases_run), 0) FROM mutants" 2>/dev/null || echo 0; }
cost_sweep() { rows_sweep "$1"; }
rows_diff() { rows_sweep "$1"; }
cost_diff() { rows_sweep "$1"; }
runs_in() { [[ -s "$1" ]] && query "$1" "SELECT count(*) FROM runs" 2>/dev/null || echo 0; }
finished_in() { [[ -s "$1" ]] && query "$1" "SELECT count(*) FROM runs WHERE finished_ms > 0" 2>/dev/null || echo 0; }

# launch NP ARGS...: starts `seam ARGS` in the background, under `mpirun -np
# NP` when NP > 1 in a session of its own (setsid: Open MPI puts each rank in
# a process group of its own, but all stay in mpirun's session); sets pid.
launch() {
  local ranks=$1
  shift
  if ((ranks > 1)); then
    setsid "$mpirun" --allow-run-as-root --oversubscribe -np "$ranks" "$seam" "$@" &
  else
    "$seam" "$@" &
  fi
  pid=$!
}
# The live (not zombie) processes of session $1.
session_pids() { ps -o pid=,stat= -s "$1" 2>/dev/null | awk '$2 !~ /^Z/ { print $1 }' || true; }
# kill_session SID: SIGKILLs every process of the session until none is left
# (mpirun may fork a rank between listing and killing).
kill_session() {
  local pids
  while pids=$(session_pids "$1") && [[ -n "$pids" ]]; do
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    sleep 0.01
  done
}
# stop NP: SIGKILLs the run `launch NP` started; true when it was still
# running. Under mpirun every other stop kills one rank alone (at random),
# then waits (at most 60 s) until mpirun has ended the rest; kill_note says
# which kind of kill it was.
stops=0
stop() {
  local ranks=$1 victims waited=0
  kill_note=""
  if ((ranks == 1)); then
    ((np > 1)) && kill_note=":np1"
    kill -KILL "$pid" 2>/dev/null
    return
  fi
  [[ -n "$(session_pids "$pid")" ]] || return 1
  stops=$((stops + 1))
  mapfile -t victims < <(ps -o pid= --ppid "$pid" 2>/dev/null | tr -d ' ')
  if ((stops % 2 == 0 && ${#victims[@]} > 0)); then
    next_random
    kill -KILL "${victims[state % ${#victims[@]}]}" 2>/dev/null || true
    kill_note=":one-rank"
    while [[ -n "$(session_pids "$pid")" ]] && ((waited < 6000)); do
      sleep 0.01
      waited=$((waited + 1))
    done
    [[ -z "$(session_pids "$pid")" ]] || { kill_note+="(mpirun left ranks running; killed)"; kill_session "$pid"; }
  else
    kill_session "$pid"
    kill_note=":np$ranks"
  fi
  return 0
}

# compare NAME WHOLE_STORE CUT_STORE CUT_OUTPUT|-: one resumed run against
# the uninterrupted one (its output too, unless it was killed after it had
# finished its run and so printed nothing).
compare() {
  local name=$1 whole=$2 cut=$3 out=$4
  if ! diff <("dump_$name" "$whole") <("dump_$name" "$cut") >"$work/$name.diff"; then
    fail "$name: the resumed store $(basename "$cut") differs from the uninterrupted one:"
    head -20 "$work/$name.diff" >&2
    return 1
  fi
  if [[ "$out" != - ]] && ! diff <("stable_$name" "$work/$name-whole.out") <("stable_$name" "$out") >"$work/$name.diff"; then
    fail "$name: the output of the run that finished $(basename "$cut") differs:"
    head -20 "$work/$name.diff" >&2
    return 1
  fi
  compared=$((compared + 1))
  # A campaign resumed after its baseline was stored takes it (mutants.md).
  [[ "$out" != - ]] && grep -q 'baseline stored by the interrupted run was reused' "$out" && reused=$((reused + 1))
  return 0
}


# verdict_wait PID: waits for a run; true when it finished with a verdict,
# exit 0 (every property holds) or 1 (a violation, e.g. an engine finding).
verdict_wait() {
  local rc=0
  wait "$1" || rc=$?
  ((rc == 0 || rc == 1))
}
