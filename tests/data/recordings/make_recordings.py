#!/usr/bin/env python3
"""Builds the recordings under tests/data/recordings/ (BUILT, not recorded: only a
one-GPU machine is lent, and NCCL refuses two ranks on one GPU).

The case: --pattern '*E' --tp 4 --dp 2 --ep 4 --tokens 2,2 (nemotron-3-nano's shapes:
hidden 2688, bf16). Each rank's collectives are derived by hand from SGLang's code, not
from seam's output (docs/research/serving-dp-gather-tbo.md, layers/dp_attention.py
@00161092eb7c):
  1. layer 1 entry: the attention's o_proj partial all-reduced over attn_tp, 2 rows;
  2. layer 1 dp_gather_replicate, MAX_LEN, attn_tp 2 (A4): M = 2 rows,
     attn_tp.reduce_scatter_tensor(2 rows -> 1 row), tp.all_gather_into_tensor(1 -> 4 rows);
  3. layer 1 dp_reduce_scatter_tensor, T=4 != D=2 (A8): tp reduce-scatter to the 1/T chunk
     (4 rows -> 1 row), then attn_tp all-gather (1 -> 2 rows). That is the MoE's combine.

Flight Recorder dumps follow the JSON schema of torch/csrc/distributed/c10d/
FlightRecorder.hpp (version "2.10"; keys entries, pg_config, pg_status, record_id, pg_id,
process_group, collective_seq_id, p2p_seq_id, is_p2p, op_id, profiling_name, input_sizes,
input_dtypes, output_sizes, output_dtypes, time_created_ns, state, frames) with pg_config
shaped as fr_trace's builder.py reads it ({name: {name, desc, ranks "[..]"}}) and the file
named <prefix><rank> as its loader.py expects. The JSON dump carries no stack frames
(FlightRecorder.hpp: "We don't include stack traces in JSON format"); the planted-bug
dumps carry one illustrative frame per entry (the SGLang function; line 0: not recorded).

NCCL logs follow NVIDIA/nccl @5067397c: line prefix "host:pid:tid [dev] NCCL INFO "
(src/debug.cc), call lines (src/enqueue.cc ncclEnqueueCheck), communicator lines
(src/init.cc, "Init COMPLETE", commId or parent/color for a split).
Run: python3 tests/data/recordings/make_recordings.py (rewrites the files).
"""
import copy
import json
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
H = 2688
WORLD = 4
ATTN_TP = {0: [0, 1], 1: [0, 1], 2: [2, 3], 3: [2, 3]}
ATTN_DP = {0: [0, 2], 2: [0, 2], 1: [1, 3], 3: [1, 3]}
TP = [0, 1, 2, 3]

# (kind, group, rows in, rows out, SGLang function it comes from)
PASS = [
    ("all_reduce", "attn_tp", 2, 2, "tensor_model_parallel_all_reduce"),
    ("reduce_scatter", "attn_tp", 2, 1, "_dp_gather_via_all_gather"),
    ("all_gather", "tp", 1, 4, "_dp_gather_via_all_gather"),
    ("reduce_scatter", "tp", 4, 1, "dp_reduce_scatter_tensor"),
    ("all_gather", "attn_tp", 1, 2, "dp_reduce_scatter_tensor"),
]
FR_NAME = {"all_reduce": "nccl:all_reduce", "reduce_scatter": "nccl:_reduce_scatter_base",
           "all_gather": "nccl:_all_gather_base"}
NCCL_NAME = {"all_reduce": "AllReduce", "reduce_scatter": "ReduceScatter",
             "all_gather": "AllGather"}


def members(group, rank):
    return {"tp": TP, "attn_tp": ATTN_TP[rank], "attn_dp": ATTN_DP[rank]}[group]


# ---- Flight Recorder ---------------------------------------------------------------

def pg_of(group, rank):
    """Process group names as torch numbers them: default pg 0, then new_group calls in order."""
    if group == "tp":
        return "1", "tp"
    if group == "attn_tp":
        return ("2" if rank < 2 else "3"), "attn_tp"
    return ("4" if rank in (0, 2) else "5"), "attn_dp"


def fr_dump(rank, calls, frames=False, first_record=0):
    pg_config = {"0": {"name": "0", "desc": "default_pg", "ranks": str(TP)}}
    for g in ("tp", "attn_tp", "attn_dp"):
        name, desc = pg_of(g, rank)
        pg_config[name] = {"name": name, "desc": desc, "ranks": str(members(g, rank))}
    seq = {}
    entries = []
    for i, (kind, group, rin, rout, fn) in enumerate(calls):
        name, desc = pg_of(group, rank)
        seq[name] = seq.get(name, 0) + 1
        e = {"record_id": i, "pg_id": int(name), "process_group": [name, desc],
             "collective_seq_id": seq[name], "p2p_seq_id": 0, "op_id": seq[name],
             "profiling_name": FR_NAME[kind], "time_created_ns": 1733220000000000000 + i * 1000,
             "input_sizes": [[rin, H]], "input_dtypes": ["BFloat16"],
             "output_sizes": [[rout, H]], "output_dtypes": ["BFloat16"],
             "state": "completed", "is_p2p": False, "retired": True,
             "timeout_ms": 600000, "duration_ms": None, "thread_id": str(140000 + rank),
             "thread_name": "MainThread"}
        if frames:
            e["frames"] = [{"name": fn, "filename": "sglang/srt/layers/dp_attention.py"
                            if fn != "tensor_model_parallel_all_reduce"
                            else "sglang/srt/distributed/communication_op.py", "line": 0}]
        entries.append(e)
    entries = entries[first_record:]
    return {"version": "2.10", "comm_lib_version": "2.27.5", "pg_config": pg_config,
            "pg_status": {}, "entries": entries}


def write_fr(folder, per_rank, frames=False, skip=(), truncate=None):
    path = os.path.join(HERE, folder)
    os.makedirs(path, exist_ok=True)
    for r in range(WORLD):
        if r in skip:
            continue
        first = truncate[1] if truncate and truncate[0] == r else 0
        with open(os.path.join(path, f"nccl_trace_rank_{r}"), "w") as f:
            json.dump(fr_dump(r, per_rank[r], frames, first), f, indent=1)
            f.write("\n")


# ---- NCCL log ------------------------------------------------------------------------

COMM_IDS = {"world": "0x6b1f0c2a9d3e4f50", "tp": "0x1c2d3e4f5a6b7c8d",
            ("attn_dp", 0): "0x2e3f4a5b6c7d8e9f", ("attn_dp", 1): "0x3f4a5b6c7d8e9fa0"}


def comm_ptr(rank, group):
    return "0x%x" % (0x55d0a0000000 + rank * 0x100000 + {"world": 0, "tp": 1, "attn_tp": 2,
                                                          "attn_dp": 3}[group] * 0x1000)


def nccl_lines(rank, calls):
    pre = f"gpu-node:{4100 + rank}:{4100 + rank} [{rank}] NCCL INFO "
    out = [pre + "Bootstrap: Using eth0:10.0.0.1<0>",
           f"{pre}ncclCommInitRankConfig comm {comm_ptr(rank, 'world')} rank {rank} nranks 4 "
           f"cudaDev {rank} nvmlDev {rank} busId {rank + 1}8000 commId {COMM_IDS['world']} - Init COMPLETE",
           f"{pre}ncclCommInitRank comm {comm_ptr(rank, 'tp')} rank {rank} nranks 4 "
           f"cudaDev {rank} nvmlDev {rank} busId {rank + 1}8000 commId {COMM_IDS['tp']} - Init COMPLETE",
           f"{pre}ncclCommSplit comm {comm_ptr(rank, 'attn_tp')} rank {rank % 2} nranks 2 "
           f"cudaDev {rank} nvmlDev {rank} busId {rank + 1}8000 parent {comm_ptr(rank, 'tp')} "
           f"childCount 1 color {rank // 2} key {rank % 2} - Init COMPLETE",
           f"{pre}ncclCommInitRank comm {comm_ptr(rank, 'attn_dp')} rank {rank // 2} nranks 2 "
           f"cudaDev {rank} nvmlDev {rank} busId {rank + 1}8000 commId "
           f"{COMM_IDS[('attn_dp', rank % 2)]} - Init COMPLETE",
           pre + "Init timings - ncclCommInitRank: rank 0 nranks 4 total 0.51"]
    count = {}
    for kind, group, rin, rout, _ in calls:
        n = len(members(group, rank))
        elems = {"all_reduce": rin, "reduce_scatter": rout, "all_gather": rin}[kind] * H
        ptr = comm_ptr(rank, group)
        op = count.get(ptr, 0)
        count[ptr] = op + 1
        out.append(f"{pre}{NCCL_NAME[kind]}: opCount {op:x} sendbuff 0x7f2a00000000 recvbuff "
                   f"0x7f2a00200000 count {elems} datatype 9 op 0 root 0 comm {ptr} [nranks={n}] "
                   f"stream 0x5611a0")
    return out


def write_nccl(name, per_rank, interleaved=True):
    logs = {r: nccl_lines(r, per_rank[r]) for r in range(WORLD)}
    if interleaved:
        lines = ["[sglang] launching 4 ranks"]
        for i in range(max(len(v) for v in logs.values())):
            for r in range(WORLD):
                if i < len(logs[r]):
                    lines.append(logs[r][i])
        os.makedirs(os.path.dirname(os.path.join(HERE, name)), exist_ok=True)
        with open(os.path.join(HERE, name), "w") as f:
            f.write("\n".join(lines) + "\n")
        return
    path = os.path.join(HERE, name)
    os.makedirs(path, exist_ok=True)
    for r in range(WORLD):
        with open(os.path.join(path, f"rank{r}.log"), "w") as f:
            f.write("\n".join(logs[r]) + "\n")


def main():
    for sub in ("fr", "nccl", "bad"):
        shutil.rmtree(os.path.join(HERE, sub), ignore_errors=True)
    correct = {r: list(PASS) for r in range(WORLD)}
    write_fr("fr/correct", correct)
    # An extra all-reduce on every rank, after the combine: every tp member issues it alike.
    extra = {r: PASS + [("all_reduce", "tp", 2, 2, "tensor_model_parallel_all_reduce")]
             for r in range(WORLD)}
    write_fr("fr/extra_allreduce", extra, frames=True)
    # The o_proj all-reduce over the attention-DP peers, a group of the same size.
    wrong = {r: [("all_reduce", "attn_dp", 2, 2, "tensor_model_parallel_all_reduce")] + PASS[1:]
             for r in range(WORLD)}
    write_fr("fr/wrong_group", wrong, frames=True)
    # The MoE's combine (dp_reduce_scatter_tensor's two collectives) dropped on every rank.
    write_fr("fr/dropped_combine", {r: PASS[:3] for r in range(WORLD)}, frames=True)
    # What fr_trace catches too: rank 3's all-gather over tp with 2 rows in, not 1.
    sizes = copy.deepcopy(correct)
    sizes[3][2] = ("all_gather", "tp", 2, 8, "_dp_gather_via_all_gather")
    write_fr("fr/size_mismatch", sizes)
    write_fr("fr/missing_rank", correct, skip=(3,))
    write_fr("fr/truncated", correct, truncate=(1, 2))
    write_nccl("nccl/correct.log", {r: PASS + PASS for r in range(WORLD)})
    write_nccl("nccl/per_rank", correct, interleaved=False)
    write_nccl("nccl/dropped_combine.log", {r: PASS[:3] for r in range(WORLD)})
    bad = os.path.join(HERE, "bad")
    for d in ("fr_malformed", "fr_foreign", "fr_version", "fr_unknown_op", "fr_no_axis"):
        os.makedirs(os.path.join(bad, d))
    text = json.dumps(fr_dump(0, PASS), indent=1)
    with open(os.path.join(bad, "fr_malformed", "nccl_trace_rank_0"), "w") as f:
        f.write(text[: len(text) // 2])
    with open(os.path.join(bad, "fr_foreign", "results_0"), "w") as f:
        json.dump({"name": "bench", "rows": [1, 2]}, f)
    with open(os.path.join(bad, "fr_version", "nccl_trace_rank_0"), "w") as f:
        json.dump(dict(fr_dump(0, PASS), version="1.0"), f)
    dump = fr_dump(0, PASS)
    dump["entries"][2]["profiling_name"] = "nccl:frobnicate"
    with open(os.path.join(bad, "fr_unknown_op", "nccl_trace_rank_0"), "w") as f:
        json.dump(dump, f, indent=1)
    for r in range(WORLD):  # a group of ranks 0 and 3 is no group of the case's axes
        dump = fr_dump(r, PASS)
        dump["pg_config"]["6"] = {"name": "6", "desc": "odd", "ranks": "[0, 3]"}
        if r in (0, 3):
            dump["entries"].append(dict(dump["entries"][0], record_id=5, process_group=["6", "odd"],
                                        pg_id=6, collective_seq_id=1))
        with open(os.path.join(bad, "fr_no_axis", f"nccl_trace_rank_{r}"), "w") as f:
            json.dump(dump, f)
    lines = nccl_lines(0, PASS)
    lines[7] = lines[7].replace(" count 2688", " count")
    with open(os.path.join(bad, "nccl_bad_line.log"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(bad, "nccl_no_init.log"), "w") as f:
        f.write("\n".join(nccl_lines(0, PASS)[6:]) + "\n")
    with open(os.path.join(bad, "not_a_log.txt"), "w") as f:
        f.write("hello\nthis is not a recording\n")


if __name__ == "__main__":
    main()
