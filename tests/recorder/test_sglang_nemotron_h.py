"""SGLang 0.5.20's Nemotron-H layers run on the CPU by the recorder. The
expected calls are what the engine itself issued when run (every expectation
below was read off the engine's execution and agrees with its code at the
cited lines of the release's files), never seam's plan."""

import json
import unittest

from seam_recorder.case import parse_case
from seam_recorder.recording import record_case


def record(pattern, timeout=120, **config):
    cfg = {"pp": 1, "tp": 1, "attn_dp": 1, "attn_cp": 1, "moe_ep": 1, "moe_dp": 1, "tokens": [4], "mode": "decode"}
    cfg.update(config)
    lines = [json.loads(l) for l in record_case(parse_case(json.dumps({"pattern": pattern, "config": cfg})), None, timeout)]
    header, verdict = lines[0], lines[-1]
    calls = [l for l in lines[1:-1] if "op" in l]
    outcomes = [l for l in lines[1:-1] if "outcome" in l]
    return header, calls, outcomes, verdict


def steps(calls, rank):
    """(layer, op, members, rows in, innermost engine file:function) of a rank."""
    out = []
    for c in calls:
        if c["rank"] != rank:
            continue
        path, _line, func = c["frames"][0].rsplit(":", 2)
        out.append((c["layer"], c["op"], tuple(c["ranks"]), c["in_shape"][0], f"{path.split('/')[-1]}:{func}"))
    return out


class PlainTensorParallel(unittest.TestCase):
    """tp 2, no DP attention: every partial sum is completed inside its
    module (RowParallelLinear reduce_results=not is_dp_attention_enabled(),
    layers/attention/mamba/mamba.py MambaMixer2 and NemotronHAttention;
    NemotronHMoE.forward's tensor_model_parallel_all_reduce)."""

    @classmethod
    def setUpClass(cls):
        cls.header, cls.calls, cls.outcomes, cls.verdict = record("M-*E", tp=2)

    def test_the_engine_ran_on_every_rank(self):
        self.assertEqual(self.verdict["verdict"], "ran")
        self.assertEqual([o["outcome"] for o in self.outcomes], ["ok", "ok"])
        self.assertEqual(self.header["engine_version"], "0.5.20")
        self.assertEqual(self.header["generation"], "single-file")

    def test_each_layer_completes_its_sum_over_tp_where_its_module_ends(self):
        tp = (0, 1)
        self.assertEqual(
            steps(self.calls, 0),
            [
                (None, "all_reduce", tp, 4, "vocab_parallel_embedding.py:forward"),
                (0, "all_reduce", tp, 4, "linear.py:forward"),  # Mamba out_proj
                (1, "all_reduce", tp, 4, "linear.py:forward"),  # MLP down_proj
                (2, "all_reduce", tp, 4, "linear.py:forward"),  # attention o_proj
                (3, "all_reduce", tp, 4, "nemotron_h.py:forward"),  # NemotronHMoE.forward
            ],
        )
        self.assertEqual(steps(self.calls, 1), steps(self.calls, 0))


class DpAttention(unittest.TestCase):
    """tp 4, dp 2 (attn_tp 2), decode batch 3,2: prepare_mlp_sync_batch pads
    each shard to a multiple of attn_tp and, decode being MAX_LEN, to the
    largest (model_executor/forward_batch_info.py); the MLP layer after a
    Mamba layer all-reduces over attention TP, then gathers over DP through
    _dp_gather_via_all_gather (a reduce-scatter over attention TP, an
    all-gather over TP) and returns through dp_reduce_scatter_tensor
    (layers/communicator.py, layers/dp_attention.py)."""

    @classmethod
    def setUpClass(cls):
        cls.header, cls.calls, cls.outcomes, cls.verdict = record("M-", tp=4, attn_dp=2, tokens=[3, 2])

    def test_attention_rows_are_padded_to_four_on_both_shards(self):
        self.assertEqual(self.verdict["verdict"], "ran")
        self.assertEqual([o["batch_tokens"] for o in self.outcomes], [4, 4, 4, 4])
        self.assertEqual({o["dp_padding"] for o in self.outcomes}, {"MAX_LEN"})

    def test_the_mlp_layer_reduces_gathers_and_scatters_back(self):
        attn_tp, tp = (0, 1), (0, 1, 2, 3)
        self.assertEqual(
            [s for s in steps(self.calls, 0) if s[0] == 1],
            [
                (1, "all_reduce", attn_tp, 4, "communicator.py:_gather_hidden_states_and_residual"),
                (1, "reduce_scatter_tensor", attn_tp, 4, "dp_attention.py:_dp_gather_via_all_gather"),
                (1, "all_gather_into_tensor", tp, 2, "dp_attention.py:_dp_gather_via_all_gather"),
                (1, "reduce_scatter_tensor", tp, 8, "dp_attention.py:dp_reduce_scatter_tensor"),
                (1, "all_gather_into_tensor", attn_tp, 2, "dp_attention.py:dp_reduce_scatter_tensor"),
            ],
        )

    def test_the_second_shard_uses_its_own_attention_group(self):
        self.assertEqual({s[2] for s in steps(self.calls, 2) if s[1] == "all_reduce"}, {(2, 3)})


class IdleAndExtend(unittest.TestCase):
    def test_an_idle_shard_takes_part_in_every_collective(self):
        _, calls, outcomes, verdict = record("M*E", tp=4, attn_dp=2, tokens=[2, 0])
        self.assertEqual(verdict["verdict"], "ran")
        self.assertEqual(len(steps(calls, 2)), len(steps(calls, 0)))
        # A hybrid-SSM idle rank gets a fabricated request of the padded length.
        self.assertEqual(outcomes[2]["batch_tokens"], 2)

    def test_an_extend_batch_gathers_by_all_reduce_over_the_summed_rows(self):
        # Extend is SUM_LEN: the DP gather all-reduces a zeroed buffer of 4 + 2
        # rows over TP (dp_attention.py _dp_gather_via_all_reduce).
        _, calls, outcomes, verdict = record("M*E", tp=4, attn_dp=2, tokens=[3, 2], mode="extend")
        self.assertEqual({o["dp_padding"] for o in outcomes}, {"SUM_LEN"})
        gathers = [s for s in steps(calls, 0) if s[4] == "dp_attention.py:_dp_gather_via_all_reduce"]
        self.assertEqual([(s[1], s[2], s[3]) for s in gathers], [("all_reduce", (0, 1, 2, 3), 6)])


class ExpertParallelAndRefusals(unittest.TestCase):
    def test_experts_over_ep_4_sum_over_tp_after_the_moe(self):
        _, calls, _, verdict = record("ME", tp=4, moe_ep=4)
        self.assertEqual(verdict["verdict"], "ran")
        self.assertEqual(steps(calls, 3)[-1], (1, "all_reduce", (0, 1, 2, 3), 4, "nemotron_h.py:forward"))

    def test_the_engines_argument_checks_refuse_ep_2_of_tp_4(self):
        _, calls, _, verdict = record("ME", tp=4, moe_ep=2)
        self.assertEqual(verdict["verdict"], "refused")
        self.assertIn("expert parallel size must be 1 or the same as the tensor parallel size", verdict["error"])
        self.assertEqual(calls, [])


if __name__ == "__main__":
    unittest.main()
