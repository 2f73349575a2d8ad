#!/usr/bin/env python3
"""Builds tests/data/recordings/training/ (BUILT, not recorded; README.md says why and how).

One PrimeRL training step of nemotron-3-nano under FSDP2 + Ulysses CP + EP, as the Flight
Recorder of each rank would hold it: --layout primerl --model nemotron-3-nano --dp 2 --cp 2
--ep 2 --docs 8 (dp_shard 2, cp 2, ep 2; PrimeRL's defaults: ac full, router fp32, reduce
fp32, ep_comm_backend torch). Every call is derived here from the engines' code, never from
seam's output (prime-rl @559b447, paths under src/prime_rl/):
  trainer/rl/train.py (train): the loss scales (3 x int64) all-reduced over dp_cp before the
    forward; under CP the log-probs gathered over cp with autograd (utils/cp.py gather_for_cp:
    torch.distributed.nn all_gather, reduce-scattered in backward), then the entropy without
    (gather_for_cp_wo_grad), fp32.
  trainer/model.py (setup_fsdp): FSDP2 units: each block; a MoE block's router (fp32
    MixedPrecisionPolicy) and its experts (over dp_shard_mod_ep) when EP is enabled; the
    embedding; [lm_head, norm] (reshard_after_forward False). Under EP explicit prefetches:
    the embedding prefetches block 0; block i prefetches block i+1 and, when it is MoE, its
    router and experts; the last block [norm, lm_head]; backward: lm_head prefetches the
    last block; block i prefetches block i-1 (MoE: then its experts, then its router); block
    0 the embedding. Gathers in param dtype (bf16; the router fp32), reduce-scatters in fp32.
  trainer/model.py (apply_ac): every block checkpointed: its forward, collectives included,
    re-runs at the start of its backward; units the explicit lists do not prefetch (the last
    block's router and experts) are gathered by their own pre-forward in that re-run.
  trainer/models/layers/cp_mamba.py (mamba_cp_forward): all_to_all_single over cp of z, dt,
    x, B, C (sequence -> head), then of the normed output (head -> sequence); backward each
    one's inverse, in reverse order.
  trainer/models/layers/ulysses_attn.py (ulysses_flash_attn_varlen_func): q, k, v sequence ->
    head (no KV replication: 2 KV heads, cp 2), the output head -> sequence.
  trainer/models/layers/moe.py (LatentMoE._run_routed_experts, torch backend) with torchtitan
    distributed/expert_parallel.py (_token_dispatch, _token_combine) @23e4dfc: per-expert
    counts (E float32) all_to_all'd under no_grad, then one row per (token, k) dispatched to
    the experts' owners, then combined back; backward: the combine's inverse, then the
    dispatch's. FSDP's unshard of the experts runs before the dispatch hook (prepended).
The step outside the model (after the micro-batch's backward), trainer/rl/train.py (train):
  clip_grad_norm_ (trainer/utils.py; optim.max_norm defaults to 1.0 with the torch EP backend,
    configs/trainer.py) -> torchtitan distributed/utils.py _clip_grad_norm_with_ep @23e4dfc: the
    experts' gradient norm, then the other parameters', each DTensor.full_tensor(): one fp32
    all_reduce per mesh dimension the norm is partial on, in mesh order (torch
    distributed/tensor/_redistribute.py @012e4b96 generate_greedy_transform_infos), FSDP2's
    dimension before EP's (fsdp/_fully_shard/_fsdp_param.py @010ae4a8 _init_sharding_spec_tp):
    over dp_shard_mod_ep, over ep, then over dp_shard_cp.
  optimizer.step() issues no collective (AdamW on local shards); no weight broadcast (the fake
    data mode skips it) and no checkpoint at this step.
  Tensors.compute_stats (trainer/utils.py) on the default process group: all_gather_object of
    the metric keys (an all_gather of each rank's pickled size, int64, then of the pickles,
    uint8, padded to the longest), then per key, sorted, flexible_all_gather (an all_gather of
    the numel, a 0-dim int64, then of the values padded to the most). The keys are train.py's
    (entropy/all and per env, loss, mismatch_kl/all and per env, the MoE load-balance stats
    max_vio and routing_confidence, one value per MoE layer) and default_loss_fn's metrics
    (trainer/rl/loss.py); one env, "env0"; how many values each holds is this script's own.
The routing is this script's own (a fixed top-6 per token), not seam's: the rows an EP rank
receives depend on it, which is why seam leaves them unchecked.
Shapes (HF config of NVIDIA-Nemotron-3-Nano; prime-rl models/nemotron_h/modeling_nemotron_h.py,
models/layers/moe.py): hidden 2688, vocab 131072, 52 layers
MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME; Mamba 64 heads x 64, 8 groups x 128
state, conv 4; attention 32 q / 2 kv heads x 128; 128 experts, top 6, expert ffn 1856,
shared ffn 3712 (non-gated).

Flight Recorder JSON: the keys of torch/csrc/distributed/c10d/FlightRecorder.hpp (version
"2.10"), pg_config as fr_trace's builder.py reads it, files named <prefix><rank> as its
loader.py expects; profiling names as ProcessGroupNCCL records them (nccl:all_reduce,
nccl:_all_gather_base for all_gather_into_tensor, nccl:_reduce_scatter_base for
reduce_scatter_tensor, nccl:all_gather / nccl:reduce_scatter for list forms,
nccl:all_to_all for all_to_all_single).
Run: python3 tests/data/recordings/training/make_training_recordings.py (rewrites correct/).
"""
import json
import os
import pickle

HERE = os.path.dirname(os.path.abspath(__file__))
PATTERN = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"
H, VOCAB = 2688, 131072
NH, HD, G, N, CONV = 64, 64, 8, 128, 4
DIN = NH * HD
QH, KVH, AHD = 32, 2, 128
E, TOPK, FFN, SHARED = 128, 6, 1856, 3712
DP, CP, EP = 2, 2, 2
WORLD = DP * CP
S = 8
LOCAL = S // CP
BF16, FP32, I64, U8 = ("BFloat16", 2), ("Float", 4), ("Long", 8), ("Byte", 1)

# Process groups: rank = dp_shard * cp + cp_rank; ep = blocks of ep in the flattened
# dp_shard x cp mesh (dp_shard_in_ep x cp); dp_shard_mod_ep its complement.
def groups_of(rank):
    d, c = divmod(rank, CP)
    return {
        "world": ("0", "default_pg", list(range(WORLD))),
        "dp_cp": ("1", "dp_cp", list(range(WORLD))),
        "fsdp": ("2", "dp_shard_cp", list(range(WORLD))),
        "cp": (str(3 + d), "cp", [d * CP + i for i in range(CP)]),
        "ep": (str(5 + rank // EP), "ep", [rank // EP * EP + i for i in range(EP)]),
        "edp": (str(7 + rank % EP), "dp_shard_mod_ep", [i for i in range(WORLD) if i % EP == rank % EP]),
    }


# FSDP units' parameters, in elements (no dim-0 padding at these shapes).
MAMBA = H + (2 * DIN + 2 * G * N + NH) * H + (DIN + 2 * G * N) * (CONV + 1) + 3 * NH + DIN + H * DIN
ATTN = H + (QH + 2 * KVH) * AHD * H + H * QH * AHD
MOE_BLOCK = H + 2 * SHARED * H
ROUTER = E * H
EXPERTS = (E // EP) * 2 * FFN * H
EMBED = VOCAB * H
HEAD = VOCAB * H + H
BLOCK = {"M": MAMBA, "*": ATTN, "E": MOE_BLOCK}


def routing(layer, replica):
    """Top-6 experts of each token of a replica's packed row (this script's own routing)."""
    return [[(t * 37 + layer * 11 + replica * 5 + j * 23) % E for j in range(TOPK)] for t in range(S)]


def ep_rows(layer, rank):
    """Rows rank sends (its tokens x top-k) and receives (rows routed to its experts)."""
    replica, c = divmod(rank, CP)
    route = routing(layer, replica)
    group = groups_of(rank)["ep"][2]
    mine = range(group.index(rank) * (E // EP), (group.index(rank) + 1) * (E // EP))
    got = 0
    for m in group:
        mc = m % CP
        for t in range(mc * LOCAL, (mc + 1) * LOCAL):
            got += sum(1 for e in route[t] if e in mine)
    return LOCAL * TOPK, got


class Calls:
    def __init__(self, rank):
        self.rank, self.out = rank, []

    def add(self, op, group, ins, outs, dtype, fn):
        self.out.append((op, group, ins, outs, dtype, fn))

    def gather(self, group, numel, dtype, fn):  # all_gather_into_tensor of a flat unit
        n = len(groups_of(self.rank)[group][2])
        self.add("_all_gather_base", group, [[numel // n]], [[numel]], dtype, fn)

    def rs(self, group, numel, fn):  # reduce_scatter_tensor in fp32
        n = len(groups_of(self.rank)[group][2])
        self.add("_reduce_scatter_base", group, [[numel]], [[numel // n]], FP32, fn)

    def a2a(self, ins, outs, group="cp", dtype=BF16, fn="_all_to_all_seq_to_head"):
        self.add("all_to_all", group, [ins], [outs], dtype, fn)


def unit_gathers(c, layer):
    """A block's units as the explicit forward prefetch lists order them."""
    c.gather("fsdp", BLOCK[PATTERN[layer]], BF16, "setup_fsdp prefetch block")
    if PATTERN[layer] == "E":
        c.gather("fsdp", ROUTER, FP32, "setup_fsdp prefetch router")
        c.gather("edp", EXPERTS, BF16, "setup_fsdp prefetch experts")


def mixer(c, layer, backward):
    kind = PATTERN[layer]
    if kind == "M":
        shapes = [[LOCAL, DIN], [LOCAL, NH], [LOCAL, DIN], [LOCAL, G * N], [LOCAL, G * N], [LOCAL, DIN]]
        for s in (reversed(shapes) if backward else shapes):
            c.a2a(s, [s[0] * CP, s[1] // CP], fn="mamba_cp_forward")
    elif kind == "*":
        shapes = [[LOCAL, QH, AHD], [LOCAL, KVH, AHD], [LOCAL, KVH, AHD], [LOCAL, QH * AHD]]
        for s in (reversed(shapes) if backward else shapes):
            c.a2a(s, s, fn="ulysses_flash_attn_varlen_func")
    else:
        sent, got = ep_rows(layer, c.rank)
        if backward:  # the combine's inverse, then the dispatch's
            c.a2a([sent, H], [got, H], "ep", fn="_token_combine")
            c.a2a([got, H], [sent, H], "ep", fn="_token_dispatch")
        else:
            c.a2a([E], [E], "ep", FP32, fn="_token_dispatch")
            c.a2a([sent, H], [got, H], "ep", fn="_token_dispatch")
            c.a2a([got, H], [sent, H], "ep", fn="_token_combine")


def step(rank):
    c = Calls(rank)
    last = len(PATTERN) - 1
    c.add("all_reduce", "dp_cp", [[3]], [[3]], I64, "train")
    c.gather("fsdp", EMBED, BF16, "embedding pre-forward")
    c.gather("fsdp", BLOCK[PATTERN[0]], BF16, "setup_fsdp prefetch block")
    for layer in range(len(PATTERN)):
        if layer < last:
            unit_gathers(c, layer + 1)
        else:
            c.gather("fsdp", HEAD, BF16, "setup_fsdp prefetch lm_head")
        mixer(c, layer, backward=False)
    c.add("all_gather", "cp", [[1, LOCAL]], [[1, LOCAL]] * CP, FP32, "gather_for_cp")
    c.add("all_gather", "cp", [[1, LOCAL]], [[1, LOCAL]] * CP, FP32, "gather_for_cp_wo_grad")
    # backward
    c.add("reduce_scatter", "cp", [[1, LOCAL]] * CP, [[1, LOCAL]], FP32, "gather_for_cp")
    c.gather("fsdp", BLOCK[PATTERN[last]], BF16, "lm_head backward prefetch")
    c.rs("fsdp", HEAD, "lm_head post-backward")
    for layer in range(last, -1, -1):
        if layer > 0:
            prev = layer - 1
            c.gather("fsdp", BLOCK[PATTERN[prev]], BF16, "backward prefetch block")
            if PATTERN[prev] == "E":
                c.gather("edp", EXPERTS, BF16, "backward prefetch experts")
                c.gather("fsdp", ROUTER, FP32, "backward prefetch router")
        else:
            c.gather("fsdp", EMBED, BF16, "backward prefetch embedding")
        if layer == last and PATTERN[layer] == "E":  # not prefetched: gathered in the re-run
            c.gather("fsdp", ROUTER, FP32, "router pre-forward (recompute)")
            c.gather("edp", EXPERTS, BF16, "experts pre-forward (recompute)")
        mixer(c, layer, backward=False)  # activation checkpointing's re-run
        mixer(c, layer, backward=True)
        if PATTERN[layer] == "E":
            c.rs("edp", EXPERTS, "experts post-backward")
            c.rs("fsdp", ROUTER, "router post-backward")
        c.rs("fsdp", BLOCK[PATTERN[layer]], "block post-backward")
    c.rs("fsdp", EMBED, "embedding post-backward")
    step_end(c)
    return c.out


MOE_LAYERS = PATTERN.count("E")
# The step's metric keys and how many values each rank holds of each (one micro-batch; every
# token of the packed row in the loss after the cp gather).
METRICS = {"entropy/all": S, "entropy/env0": S, "loss": 1, "mismatch_kl/all": S,
           "mismatch_kl/env0": S, "max_vio": MOE_LAYERS, "routing_confidence": MOE_LAYERS,
           "masked_mismatch_kl": 1, "unmasked_mismatch_kl": 1, "is_masked": 1,
           "is_masked_low": 1, "is_masked_high": 1, "masked_advantage_positive": 1,
           "masked_advantage_negative": 1}


def step_end(c):
    """What train() issues after the backward, outside the model (docstring above)."""
    for group in ("edp", "ep", "fsdp"):
        c.add("all_reduce", group, [[]], [[]], FP32, "_clip_grad_norm_with_ep")
    keys = sorted(METRICS)
    size = len(pickle.dumps(keys, protocol=5))
    c.add("all_gather", "world", [[1]], [[1]] * WORLD, I64, "compute_stats")
    c.add("all_gather", "world", [[size]], [[size]] * WORLD, U8, "compute_stats")
    for key in keys:
        c.add("all_gather", "world", [[]], [[]] * WORLD, I64, "flexible_all_gather")
        n = METRICS[key]
        c.add("all_gather", "world", [[n]], [[n]] * WORLD, FP32, "flexible_all_gather")


FILES = {"train": "prime_rl/trainer/rl/train.py", "gather_for_cp": "prime_rl/utils/cp.py",
         "gather_for_cp_wo_grad": "prime_rl/utils/cp.py",
         "mamba_cp_forward": "prime_rl/trainer/models/layers/cp_mamba.py",
         "ulysses_flash_attn_varlen_func": "prime_rl/trainer/models/layers/ulysses_attn.py",
         "_token_dispatch": "torchtitan/distributed/expert_parallel.py",
         "_token_combine": "torchtitan/distributed/expert_parallel.py",
         "_clip_grad_norm_with_ep": "torchtitan/distributed/utils.py",
         "compute_stats": "prime_rl/trainer/utils.py",
         "flexible_all_gather": "prime_rl/trainer/utils.py"}


def dump(rank, calls, frames=False):
    gs = groups_of(rank)
    pg_config = {}
    for name, desc, members in gs.values():
        pg_config[name] = {"name": name, "desc": desc, "ranks": str(members)}
    seq, entries = {}, []
    for i, (op, group, ins, outs, dtype, fn) in enumerate(calls):
        name, desc, _ = gs[group]
        seq[name] = seq.get(name, 0) + 1
        e = {"record_id": i, "pg_id": int(name), "process_group": [name, desc],
             "collective_seq_id": seq[name], "p2p_seq_id": 0, "op_id": seq[name],
             "profiling_name": "nccl:" + op, "time_created_ns": 1764800000000000000 + i * 1000,
             "input_sizes": ins, "input_dtypes": [dtype[0]] * len(ins),
             "output_sizes": outs, "output_dtypes": [dtype[0]] * len(outs),
             "state": "completed", "is_p2p": False, "retired": True, "timeout_ms": 600000,
             "duration_ms": None, "thread_id": str(150000 + rank), "thread_name": "MainThread"}
        if frames and fn in FILES:
            e["frames"] = [{"name": fn, "filename": FILES[fn], "line": 0}]
        entries.append(e)
    return {"version": "2.10", "comm_lib_version": "2.27.5", "pg_config": pg_config,
            "pg_status": {}, "entries": entries}


def main():
    path = os.path.join(HERE, "correct")
    os.makedirs(path, exist_ok=True)
    for r in range(WORLD):
        d = dump(r, step(r))
        with open(os.path.join(path, f"nccl_trace_rank_{r}"), "w") as f:
            # One entry per line: diffs stay readable.
            f.write("{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in d.items()
                                    if k != "entries") + ', "entries": [\n')
            f.write(",\n".join(json.dumps(e, separators=(",", ":")) for e in d["entries"]))
            f.write("\n]}\n")
    print(f"wrote {path}: {len(step(0))} calls per rank")


if __name__ == "__main__":
    main()
