"""SGLang 0.5.20's two-batch overlap (--enable-two-batch-overlap) on
DeepSeek-V3 layers: the scheduler's split decision by the engine's own
preparer, the engine's split of the batch into two children and its
overlapped operations. Expected outcomes read off the engine's execution,
agreeing with its code at the cited places."""

import json
import unittest

from test_sglang_nemotron_h import steps

from seam_recorder.case import parse_case
from seam_recorder.recording import record_case


def record(pattern, **config):
    cfg = {"pp": 1, "tp": 4, "attn_dp": 2, "attn_cp": 1, "moe_ep": 1, "moe_dp": 1, "tokens": [8, 6],
           "mode": "decode", "tbo": True}
    cfg.update(config)
    doc = {"pattern": pattern, "architecture": "DeepseekV3ForCausalLM", "family": "two-stage",
           "shape": {"heads": 128, "experts": 256, "top_k": 8}, "config": cfg}
    lines = [json.loads(l) for l in record_case(parse_case(json.dumps(doc)), None, 120)]
    calls = [l for l in lines[1:-1] if "op" in l]
    outcomes = [l for l in lines[1:-1] if "outcome" in l]
    return lines[0], calls, outcomes, lines[-1]


class TboUnderDpAttentionWithoutAnA2aBackend(unittest.TestCase):
    """docs/engine-findings.md: a half's DP gather has no global buffer."""

    @classmethod
    def setUpClass(cls):
        cls.header, cls.calls, cls.outcomes, cls.verdict = record("*-*E*E")

    def test_the_engine_accepts_the_flags(self):
        self.assertIn("--enable-two-batch-overlap", self.header["launch_flags"])
        self.assertNotEqual(self.verdict["verdict"], "refused")

    def test_every_rank_raises_allocating_the_global_dp_buffer_in_the_first_halfs_first_moe_layer(self):
        # TboForwardBatchPreparer.filter_batch gives each child no
        # global_dp_buffer_len; _StageExecutor.next publishes it
        # (set_dp_buffer_len) before each stage; op_comm_prepare_mlp's DP
        # gather then asks get_global_dp_buffer for a buffer of None rows.
        self.assertEqual(self.verdict["verdict"], "raised")
        for o in self.outcomes:
            self.assertEqual(o["outcome"], "raised")
            self.assertTrue(o["error"].startswith("TypeError: empty()"))
            self.assertTrue(o["where"].startswith("sglang/srt/layers/dp_attention.py:"))
            self.assertTrue(o["where"].endswith(":get_global_dp_buffer"))
            names = [f.rsplit(":", 1)[1] for f in o["frames"]]
            self.assertIn("op_comm_prepare_mlp", names)
            self.assertIn("execute_overlapped_operations", names)

    def test_the_dense_layer_runs_on_the_whole_batch_before_the_split(self):
        # DeepseekV2Model.forward runs the layers before first_k_dense_replace
        # normally, then model_forward_maybe_tbo over the MoE layers.
        self.assertEqual({s[0] for s in steps(self.calls, 0)}, {None, 0})
        self.assertEqual([s[3] for s in steps(self.calls, 0) if s[0] == 0], [8, 4, 16, 4])


class TboWithoutTheSplit(unittest.TestCase):
    def test_without_dp_attention_the_scheduler_never_splits_and_the_layers_run_whole(self):
        # require_mlp_sync() is false (no DP attention, a2a none, dense TP):
        # the scheduler's DP sync, which takes the split decision, never runs.
        _, calls, outcomes, verdict = record("*-*E", attn_dp=1, tokens=[8])
        self.assertEqual(verdict["verdict"], "ran")
        self.assertEqual([o["tbo_children_tokens"] for o in outcomes], [[]] * 4)
        self.assertEqual([s[1:4] for s in steps(calls, 0) if s[0] == 1],
                         [("all_reduce", (0, 1, 2, 3), 8)] * 2)

    def test_the_deepep_backend_is_a_gap_of_the_recorder(self):
        _, _, _, verdict = record("*-*E", attn_dp=1, tokens=[8], moe_ep=4, a2a="deepep")
        self.assertEqual(verdict["verdict"], "cpu-gap")


if __name__ == "__main__":
    unittest.main()
