"""One case recorded, as the lines of the recording seam reads
(docs/recordings.md, "seam-recorder"): a header, every rank's calls in
order, each rank's outcome, and the run's verdict. The cases one server
runs (the same launch, other batches) are recorded as that server's
forwards, one after another (record_cases)."""

from __future__ import annotations

import dataclasses
import json
import tempfile
import time
from typing import Any, Dict, List, Optional

from . import sglang_engine
from .case import Case
from .world import WorldResult, run_world_steps

FORMAT = "seam-recorder"

# Errors that say the CPU lacks what a GPU run has (a driver, a CUDA-only
# kernel overload), not that the engine's logic failed: the recorder cannot
# run such a case yet, and that is never an engine finding.
_CPU_GAPS = (
    "No accelerator",
    "NVIDIA driver",
    "Torch not compiled with CUDA",
    "with arguments from the 'CPU' backend",
    "CUDA driver",
    "No CUDA GPUs",
    "ModuleNotFoundError",  # a kernel package of the engine's that the recorder's environment lacks
    "DeepEP is not installed",  # the DeepEP all-to-all, which the recorder does not stand in for
    "Cannot re-initialize CUDA",  # a CUDA call in a forked CPU rank
)


def cpu_gap(error: str) -> bool:
    return any(marker in error for marker in _CPU_GAPS)


FORMAT_VERSION = 1


def _line(obj: Dict[str, Any]) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def server_key(case: Case) -> str:
    """What a server's launch decides: the case without its batch (tokens
    and mode). Cases with one key are forwards of one server."""
    return repr(dataclasses.replace(case, tokens=[], mode=""))


def record_case(case: Case, engine_src: Optional[str], timeout_s: float) -> List[str]:
    return record_cases([case], engine_src, timeout_s)[0]


def record_cases(cases: List[Case], engine_src: Optional[str], timeout_s: float) -> List[List[str]]:
    """The recordings of cases that one server runs (one server_key): the
    engine's argument resolution once, one world whose ranks build their
    groups and model once and run each case's forward in turn. A forward
    that does not end with every rank ok ends that world; the cases after it
    run in a fresh one. Each forward may take timeout_s."""
    if len({server_key(c) for c in cases}) != 1:
        raise ValueError("record_cases: give the cases of one server")
    engine = _load(engine_src)
    out: List[List[str]] = []
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="seam-recorder-") as workdir:
        try:
            prepared = sglang_engine.prepare(engine, cases[0], workdir)
        except sglang_engine.EngineRefusal as refusal:
            verdict = {"verdict": "refused", "error": str(refusal), "where": refusal.where,
                       "seconds": round(time.monotonic() - start, 3)}
            return [[_line(_header(engine, c, 0)), _line(verdict)] for c in cases]
        except sglang_engine.RecorderGap as gap:
            verdict = {"verdict": "cpu-gap", "failure": str(gap), "seconds": round(time.monotonic() - start, 3)}
            return [[_line(_header(engine, c, 0)), _line(verdict)] for c in cases]
        while len(out) < len(cases):
            batches = cases[len(out):]
            results = run_world_steps(
                batches[0].world,
                lambda rank, comm: sglang_engine.rank_steps(prepared, batches, rank, comm),
                len(batches),
                timeout_s,
            )
            for before, result in enumerate(results):
                out.append(_lines(_header(engine, batches[before], before), result))
    return out


def _load(engine_src: Optional[str]) -> sglang_engine.Engine:
    engine = sglang_engine.load(engine_src)
    try:
        sglang_engine.install(engine)
    except ModuleNotFoundError as e:
        raise sglang_engine.EngineError(
            f"importing SGLang failed: no module named {e.name!r}; tools/setup.sh installs the "
            "recorder's pinned packages (recorder/requirements.txt)"
        ) from None
    except Exception as e:  # a tree whose modules do not import (a syntax error, ...) is bad input
        raise sglang_engine.EngineError(f"importing SGLang failed: {type(e).__name__}: {e}") from None
    return engine


def _header(engine: sglang_engine.Engine, case: Case, forwards_before: int) -> Dict[str, Any]:
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "engine": engine.name,
        "engine_version": engine.version,
        "engine_source": engine.source,
        "engine_commit": engine.commit,
        "generation": engine.generation,
        "world": case.world,
        "hidden": sglang_engine.HIDDEN,
        "pattern": case.pattern,
        "mtp": case.mtp,
        "tokens": case.tokens,
        "mode": case.mode,
        # The forwards the same server (model and groups built once) ran before this one.
        "forwards_before": forwards_before,
        "launch_flags": case.launch_flags(),
        "standins": [
            "mamba2 scan and causal conv",
            "attention kernel",
            "fused MoE kernel",
            "router mm out_dtype",
            "dp_attention memcpy (the engine's memcpy_cpu)",
            "rotary embedding (its torch-native path)",
        ]
        + (["MLA attention before o_proj"] if case.architecture == "DeepseekV3ForCausalLM" else [])
        + (["FlashInfer fused all-reduce + residual + RMSNorm kernel"] if case.fusion else [])
        + (["FlashAttention backend under CP: its K/V all-gather through the engine's strategy, no KV pool"]
           if case.attn_cp > 1 else [])
        + (["TboAttnBackend over the attention stand-ins", "MLA forward_prepare (TBO operations)",
            "CUDA device properties (132 SMs) and deep_ep.Buffer.num_sms (20)"] if case.tbo else []),
        "fused_allreduce_kernel": (
            "on: the fusion gate's SM90 and FlashInfer facts set, the kernel stood in for"
            if case.fusion
            else "off: the fusion gate's SM90 and FlashInfer facts unset"
        ),
    }


def _lines(header: Dict[str, Any], result: WorldResult) -> List[str]:
    """One forward's recording: the header, every rank's calls, each rank's
    outcome, the verdict."""
    lines = [_line(header)]
    for rank, calls in enumerate(result.calls):
        for call in calls:
            lines.append(_line(dict(call, rank=rank)))
    for rank, outcome in enumerate(result.outcomes):
        entry: Dict[str, Any] = {"rank": rank, "outcome": outcome.status}
        if outcome.status == "ok":
            entry.update(outcome.result)
        elif outcome.error:
            entry["error"] = outcome.error.splitlines()[0][:400]
            entry["where"] = outcome.where
            if outcome.frames:
                entry["frames"] = outcome.frames
            if outcome.status == "raised" and cpu_gap(outcome.error):
                entry["outcome"] = "cpu-gap"
        lines.append(_line(entry))
    raised = [o for o in result.outcomes if o.status in ("raised", "died")]
    if any(o.status == "recorder-error" for o in result.outcomes):
        verdict = "recorder-error"
    elif any(o.status == "raised" and cpu_gap(o.error) for o in raised):
        verdict = "cpu-gap"
    elif result.failure_kind:
        verdict = result.failure_kind
    elif raised:
        verdict = "raised"
    else:
        verdict = "ran"
    lines.append(_line({"verdict": verdict, "failure": result.failure, "seconds": round(result.seconds, 3)}))
    return lines
