"""SGLang 0.5.20's DeepSeek-V3 decoder layers (MLA attention, dense MLPs
first, then MoE) run on the CPU with the attention before o_proj stood in
for. Expected calls read off the engine's own execution, agreeing with its
code at the cited places."""

import json
import unittest

from test_sglang_nemotron_h import steps

from seam_recorder.case import parse_case
from seam_recorder.recording import record_case


def record(pattern, **config):
    cfg = {"pp": 1, "tp": 1, "attn_dp": 1, "attn_cp": 1, "moe_ep": 1, "moe_dp": 1, "tokens": [4], "mode": "decode"}
    cfg.update(config)
    doc = {"pattern": pattern, "architecture": "DeepseekV3ForCausalLM", "family": "two-stage",
           "shape": {"heads": 128, "experts": 256, "top_k": 8}, "config": cfg}
    lines = [json.loads(l) for l in record_case(parse_case(json.dumps(doc)), None, 120)]
    return [l for l in lines[1:-1] if "op" in l], lines[-1]


class DeepseekUnderDpAttentionWithEp(unittest.TestCase):
    def test_the_dp_return_is_a_reduce_scatter_not_reduce_scatterv_under_attention_tp(self):
        # layers/moe/utils.py should_use_dp_reduce_scatterv requires
        # tp_size == attn_dp_size in 0.5.20 (attention TP is 2 here), so
        # _scatter_hidden_states takes dp_reduce_scatter_tensor.
        calls, verdict = record("*E*E", tp=4, attn_dp=2, moe_ep=2, tokens=[3, 2])
        self.assertEqual(verdict["verdict"], "ran")
        ops = {c["op"] for c in calls}
        self.assertNotIn("reduce_scatterv", ops)
        returns = [s for s in steps(calls, 0) if s[4] == "dp_attention.py:dp_reduce_scatter_tensor"]
        self.assertEqual([(s[0], s[1], s[2]) for s in returns],
                         [(0, "reduce_scatter_tensor", (0, 1, 2, 3)), (0, "all_gather_into_tensor", (0, 1)),
                          (1, "reduce_scatter_tensor", (0, 1, 2, 3)), (1, "all_gather_into_tensor", (0, 1))])


class DeepseekUnderTp(unittest.TestCase):
    def test_the_dense_layer_and_the_moe_layer_each_sum_over_tp(self):
        calls, verdict = record("*-*E", tp=2)
        self.assertEqual(verdict["verdict"], "ran")
        self.assertEqual(
            [s for s in steps(calls, 0) if s[0] is not None],
            [
                (0, "all_reduce", (0, 1), 4, "communicator.py:_gather_hidden_states_and_residual"),
                (0, "all_reduce", (0, 1), 4, "linear.py:forward"),
                (1, "all_reduce", (0, 1), 4, "communicator.py:_gather_hidden_states_and_residual"),
                (1, "all_reduce", (0, 1), 4, "deepseek_v2.py:forward_normal"),
            ],
        )


if __name__ == "__main__":
    unittest.main()


class DeepseekDpGatherv(unittest.TestCase):
    """SGLANG_DP_USE_GATHERV=1, read by dp_attention.py at its import;
    is_dp_gatherv_active asks for attention TP 1, tp == dp and SUM_LEN."""

    def test_an_extend_gathers_the_shards_with_all_gatherv_of_their_own_sizes(self):
        calls, verdict = record("*-*E", tp=2, attn_dp=2, tokens=[3, 2], mode="extend", dp_gatherv=True)
        self.assertEqual(verdict["verdict"], "ran")
        gathers = [c for c in calls if c["rank"] == 1 and c["op"] == "all_gatherv"]
        self.assertEqual([(c["layer"], c["in_shape"][0], c["sizes"]) for c in gathers], [(0, 2, [3, 2]), (1, 2, [3, 2])])
        self.assertTrue(all(c["frames"][0].endswith(":_dp_gather_via_all_gatherv") for c in gathers))

    def test_without_the_variable_the_same_extend_gathers_by_all_reduce(self):
        # The variable of the case before does not leak into this one.
        record("*-*E", tp=2, attn_dp=2, tokens=[3, 2], mode="extend", dp_gatherv=True)
        calls, verdict = record("*-*E", tp=2, attn_dp=2, tokens=[3, 2], mode="extend")
        self.assertEqual(verdict["verdict"], "ran")
        self.assertNotIn("all_gatherv", {c["op"] for c in calls})


class DeepseekInputScatteredAttention(unittest.TestCase):
    def test_each_layer_reduce_scatters_its_input_and_gathers_the_qkv_latent_over_tp(self):
        # --enable-attn-tp-input-scattered, tp 4, an extend of 6 tokens padded
        # to 8 (forward_batch_info.py prepare_attn_tp_scatter_input):
        # prepare_attn reduce-scatters the layer input over TP
        # (communicator.py _tp_reduce_scatter; for layer 0 the embedding's
        # partial, for layer 1 the dense MLP's), the MLA prepare fetches the
        # q/kv latent all-gathered over TP (AttentionInputs.fetch_qkv_latent),
        # prepare_mlp all-reduces the attention output with the scattered
        # residual, and the last layer's MoE all-reduces its output. The
        # embedding leaves its partial sum for layer 0 (vocab_parallel_embedding.py
        # forward skips its all-reduce under input scattering).
        calls, verdict = record("*-*E", tp=4, tokens=[6], mode="extend", input_scattered=True)
        self.assertEqual(verdict["verdict"], "ran")
        tp = (0, 1, 2, 3)
        per_layer = [
            ("reduce_scatter_tensor", tp, 8, "communicator.py:tp_reduce_scatter"),
            ("all_gather_into_tensor", tp, 2, "communicator.py:tp_all_gather_hidden_states"),
            ("all_reduce", tp, 8, "communicator.py:_tp_all_reduce_with_scattered_residual"),
        ]
        self.assertEqual([s[1:] for s in steps(calls, 2) if s[0] == 0], per_layer)
        self.assertEqual([s[1:] for s in steps(calls, 2) if s[0] == 1],
                         per_layer + [("all_reduce", tp, 8, "deepseek_v2.py:forward_normal")])
        self.assertEqual([s for s in steps(calls, 2) if s[0] is None], [])
