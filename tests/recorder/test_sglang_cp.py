"""SGLang 0.5.20's prefill context parallelism (--attn-cp-size with
--enable-prefill-cp --cp-strategy zigzag) run on the CPU: the engine's own
split of the sequence, its K/V and hidden-state gathers over the CP group and
its communicator's CP gather before the MLP. Expected calls read off the
engine's execution, agreeing with its code at the cited places."""

import json
import unittest

from test_sglang_nemotron_h import steps

from seam_recorder.case import parse_case
from seam_recorder.recording import record_case


def record(pattern, **config):
    cfg = {"pp": 1, "tp": 4, "attn_dp": 1, "attn_cp": 2, "moe_ep": 1, "moe_dp": 1, "tokens": [9], "mode": "extend"}
    cfg.update(config)
    doc = {"pattern": pattern, "architecture": "Qwen3ForCausalLM", "family": "two-stage",
           "shape": {"heads": 32, "kv_heads": 8}, "config": cfg}
    lines = [json.loads(l) for l in record_case(parse_case(json.dumps(doc)), None, 120)]
    return lines[0], [l for l in lines[1:-1] if "op" in l], lines[-1]


class ZigzagExtendOverTwoCpRanks(unittest.TestCase):
    """tp 4, cp 2 (attention TP 2; CP groups {0,2} and {1,3}), one request of
    9 tokens: the zigzag split gives the CP ranks 5 and 4 tokens, padded to
    8 rows each (layers/cp/padding.py pad_logical_token_to_physical: aligned
    to 2 x cp)."""

    @classmethod
    def setUpClass(cls):
        cls.header, cls.calls, cls.verdict = record("*-")

    def test_the_case_asks_for_prefill_cp_with_the_zigzag_layout(self):
        self.assertEqual(self.verdict["verdict"], "ran")
        flags = " ".join(self.header["launch_flags"])
        self.assertIn("--attn-cp-size 2 --enable-prefill-cp --cp-strategy zigzag", flags)

    def test_a_cp_rank_gathers_kv_and_the_mlp_input_over_cp_and_the_output_at_the_end(self):
        cp, attn_tp, tp = (1, 3), (2, 3), (0, 1, 2, 3)
        self.assertEqual(
            steps(self.calls, 3),
            [
                # The whole sequence embedded before the split (eager_runner.py _execute_extend_cp).
                (None, "all_reduce", tp, 9, "vocab_parallel_embedding.py:forward"),
                # The FlashAttention backend's materialize_full_kv: K and V of
                # the rank's 5 logical rows, all-gathered over CP.
                (0, "all_gather_into_tensor", cp, 5, "zigzag.py:_all_gather_reorganized"),
                # prepare_mlp: the o_proj partial summed over attention TP on
                # the 8 physical rows, then the CP ranks' rows gathered
                # (communicator.py _gather_hidden_states_and_residual_moe).
                (0, "all_reduce", attn_tp, 8, "communicator.py:_gather_hidden_states_and_residual"),
                (0, "all_gather_into_tensor", cp, 8, "dp_attention.py:moe_cp_all_gather_into_tensor"),
                # Qwen2MLP's down_proj over the whole TP group on both shards' rows.
                (0, "all_reduce", tp, 16, "linear.py:forward"),
                # cp_gather_after_forward: the hidden states back in token order.
                (None, "all_gather_into_tensor", cp, 5, "zigzag.py:_all_gather_reorganized"),
            ],
        )

    def test_a_decode_batch_is_not_split_over_cp(self):
        _, calls, verdict = record("*-", tokens=[3], mode="decode")
        self.assertEqual(verdict["verdict"], "ran")
        self.assertEqual([s[1] for s in steps(calls, 3)], ["all_reduce"] * 3)


class MlaUnderCp(unittest.TestCase):
    def test_deepseeks_mla_prefill_cp_turns_deepep_on_which_the_recorder_does_not_run(self):
        # arg_groups overrides for MLA prefill CP: attn_cp = tp, ep = tp and
        # --moe-a2a-backend deepep, set by the engine itself.
        doc = {"pattern": "*-*E", "architecture": "DeepseekV3ForCausalLM", "family": "two-stage",
               "shape": {"heads": 128, "experts": 256, "top_k": 8},
               "config": {"pp": 1, "tp": 4, "attn_dp": 1, "attn_cp": 2, "moe_ep": 1, "moe_dp": 1, "tokens": [9],
                          "mode": "extend"}}
        verdict = json.loads(record_case(parse_case(json.dumps(doc)), None, 60)[-1])
        self.assertEqual(verdict["verdict"], "cpu-gap")
        self.assertIn("--moe-a2a-backend deepep", verdict["failure"])


class AttentionTpReduceScatterOfACpShard(unittest.TestCase):
    def test_a_shard_of_12_rows_does_not_split_over_attention_tp_8(self):
        # docs/engine-findings.md: tp 16, cp 2 (attention TP 8), 20 tokens:
        # each CP rank holds 10 tokens, padded to 12 rows; with
        # --moe-dense-tp-size 1 the MLP input is scattered over attention TP
        # (communicator.py _scatter_hidden_states_and_residual: tensor_split,
        # then attn_tp_reduce_scatter_tensor), 12 rows into 8 members.
        _, calls, verdict = record("*-", tp=16, tokens=[20], dense_tp=1)
        self.assertEqual(verdict["verdict"], "mismatch")
        self.assertIn("reduce_scatter over 8 members of shapes that do not split evenly", verdict["failure"])
        self.assertIn("communicator.py:1330:_scatter_hidden_states_and_residual", verdict["failure"])
        outs = sorted({tuple(c["out_shape"]) for c in calls if c["op"] == "reduce_scatter_tensor"})
        self.assertEqual(outs, [(1, 64), (2, 64)])


if __name__ == "__main__":
    unittest.main()
