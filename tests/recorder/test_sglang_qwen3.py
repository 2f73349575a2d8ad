"""SGLang 0.5.20's Qwen3 (dense) decoder layers run on the CPU: the classic
LayerCommunicator between two stages of a layer (attention, MLP). Expected
calls read off the engine's own execution, agreeing with its code at the
cited places (layers/communicator.py, models/qwen3.py, layers/linear.py)."""

import json
import unittest

from test_sglang_nemotron_h import steps

from seam_recorder.case import parse_case
from seam_recorder.recording import record_case


def record(pattern, **config):
    cfg = {"pp": 1, "tp": 1, "attn_dp": 1, "attn_cp": 1, "moe_ep": 1, "moe_dp": 1, "tokens": [4], "mode": "decode"}
    cfg.update(config)
    doc = {"pattern": pattern, "architecture": "Qwen3ForCausalLM", "family": "two-stage",
           "shape": {"heads": 32, "kv_heads": 8}, "config": cfg}
    lines = [json.loads(l) for l in record_case(parse_case(json.dumps(doc)), None, 120)]
    return [l for l in lines[1:-1] if "op" in l], lines[-1]


class Qwen3DenseLayers(unittest.TestCase):
    def test_under_tp_the_communicator_sums_attention_and_the_mlp_sums_itself(self):
        # Fusion off: prepare_mlp all-reduces the o_proj partial over tp
        # (communicator.py _gather_hidden_states_and_residual); the MLP's
        # down_proj is a RowParallelLinear that reduces its own output.
        calls, verdict = record("*-*-", tp=2)
        self.assertEqual(verdict["verdict"], "ran")
        tp = (0, 1)
        self.assertEqual(
            [s for s in steps(calls, 0) if s[0] is not None],
            [
                (0, "all_reduce", tp, 4, "communicator.py:_gather_hidden_states_and_residual"),
                (0, "all_reduce", tp, 4, "linear.py:forward"),
                (1, "all_reduce", tp, 4, "communicator.py:_gather_hidden_states_and_residual"),
                (1, "all_reduce", tp, 4, "linear.py:forward"),
            ],
        )

    def test_tp_8_splits_32_query_and_8_kv_heads_and_runs(self):
        calls, verdict = record("*-", tp=8)
        self.assertEqual(verdict["verdict"], "ran")
        self.assertEqual({c["rank"] for c in calls}, set(range(8)))


if __name__ == "__main__":
    unittest.main()


class MoeDenseTpOneOnADenseModel(unittest.TestCase):
    def test_the_mlp_all_reduces_unequal_slices_over_tp_and_the_members_disagree(self):
        # docs/engine-findings.md: the communicator scatters the MLP's input
        # (enable_moe_dense_fully_dp) while Qwen2MLP's down_proj reduces over TP.
        cfg = {"tp": 8, "attn_dp": 2, "tokens": [0, 1], "mode": "extend", "dense_tp": 1}
        calls, verdict = record("*-", **cfg)
        self.assertEqual(verdict["verdict"], "mismatch")
        self.assertIn("all_reduce of different shapes", verdict["failure"])
        self.assertIn("sglang/srt/layers/linear.py:1691:forward < sglang/srt/models/qwen2.py", verdict["failure"])


class LayernormSpOfOneToken(unittest.TestCase):
    def test_an_extend_of_one_token_is_padded_to_a_row_a_rank_and_gathered_as_eight(self):
        # --enable-layernorm-sp: prepare_attn opens the SP region in an
        # EXTEND (communicator.py); sp_entry_scatter pads the 1 token to a
        # multiple of tp (8 rows) and keeps one row a rank; sp_exit_gather
        # all-gathers rows x tp and narrows to the real count afterwards
        # (layers/layernorm_sp.py). The 7 padding rows travel: the engine's
        # own sizes, not a fault of the recorder.
        calls, verdict = record("*-", tp=8, tokens=[1], mode="extend", layernorm_sp=True)
        self.assertEqual(verdict["verdict"], "ran")
        self.assertEqual(
            [(s[1], s[3], s[4]) for s in steps(calls, 0) if s[0] == 0],
            [
                ("all_gather_into_tensor", 1, "layernorm_sp.py:sp_exit_gather"),
                ("reduce_scatter_tensor", 8, "layernorm_sp.py:row_parallel_gbar_matmul"),
                ("all_gather_into_tensor", 1, "layernorm_sp.py:sp_exit_gather"),
                ("reduce_scatter_tensor", 8, "layernorm_sp.py:row_parallel_gbar_matmul"),
            ],
        )
        gathers = [c for c in calls if c["rank"] == 0 and c["op"] == "all_gather_into_tensor"]
        self.assertEqual({tuple(c["out_shape"]) for c in gathers}, {(8, 64)})

    def test_a_decode_of_one_token_stays_outside_the_sp_region(self):
        calls, verdict = record("*-", tp=8, tokens=[1], mode="decode", layernorm_sp=True)
        self.assertEqual(verdict["verdict"], "ran")
        self.assertEqual([s[1] for s in steps(calls, 0) if s[0] == 0], ["all_reduce", "all_reduce"])
