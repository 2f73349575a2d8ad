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
