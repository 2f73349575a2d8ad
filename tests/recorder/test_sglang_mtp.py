"""SGLang 0.5.20's MTP draft models (--speculative-algorithm NEXTN) run by
the recorder after the target's forward on the same ranks and groups. The
expected calls were read off the engine's execution and agree with its code
at the cited places (models/nemotron_h_mtp.py, models/deepseek_nextn.py),
never with seam's plan."""

import json
import unittest

from test_sglang_nemotron_h import steps

from seam_recorder.case import CaseError, parse_case
from seam_recorder.recording import record_case


def record(pattern, architecture="", **config):
    cfg = {"pp": 1, "tp": 1, "attn_dp": 1, "attn_cp": 1, "moe_ep": 1, "moe_dp": 1, "tokens": [3], "mode": "decode"}
    cfg.update(config)
    doc = {"pattern": pattern, "config": cfg}
    if architecture:
        doc.update(architecture=architecture, family="two-stage", shape={"heads": 128, "experts": 256, "top_k": 8})
    lines = [json.loads(l) for l in record_case(parse_case(json.dumps(doc)), None, 120)]
    calls = [l for l in lines[1:-1] if "op" in l]
    outcomes = [l for l in lines[1:-1] if "outcome" in l]
    return lines[0], calls, outcomes, lines[-1]


def draft_steps(calls, rank):
    return [s for s, c in zip(steps(calls, rank), [c for c in calls if c["rank"] == rank]) if c.get("draft")]


class NemotronHDraftUnderTp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.header, cls.calls, cls.outcomes, cls.verdict = record("M-/*E", tp=2)

    def test_the_case_asks_the_engine_for_nextn_and_it_builds_its_mtp_class(self):
        self.assertEqual(self.verdict["verdict"], "ran")
        self.assertIn("--speculative-algorithm", self.header["launch_flags"])
        self.assertEqual(self.header["mtp"], "*E")
        self.assertEqual([o["draft_output_shape"] for o in self.outcomes], [[3, 64], [3, 64]])

    def test_the_draft_layers_are_numbered_after_the_targets_and_sum_over_tp(self):
        tp = (0, 1)
        self.assertEqual(
            draft_steps(self.calls, 0),
            [
                # NemotronHMultiTokenPredictor.get_input_embeddings: the draft's own embedding.
                (None, "all_reduce", tp, 3, "vocab_parallel_embedding.py:forward"),
                # The first MTP layer's eh_proj, a ColumnParallelLinear with gather_output.
                (2, "all_gather", tp, 3, "linear.py:forward"),
                # NemotronHAttention's o_proj (reduce_results without DP attention).
                (2, "all_reduce", tp, 3, "linear.py:forward"),
                # NemotronHMoE.forward's tensor_model_parallel_all_reduce.
                (3, "all_reduce", tp, 3, "nemotron_h.py:forward"),
            ],
        )
        self.assertFalse(any(c.get("draft") for c in self.calls if c["layer"] in (0, 1)))


class NemotronHDraftUnderDpAttention(unittest.TestCase):
    def test_the_mtp_moe_layer_all_reduces_the_attention_output_twice_over_attention_tp(self):
        # docs/engine-findings.md: NemotronHMTPMoEDecoderLayer.forward calls
        # attn_tp_all_reduce when the layer before it is attention, then
        # prepare_mlp (communicator.py _gather_hidden_states_and_residual)
        # all-reduces the same rows again.
        _, calls, _, verdict = record("M-/*E", tp=4, attn_dp=2, tokens=[3, 2])
        self.assertEqual(verdict["verdict"], "ran")
        layer3 = [s for s in draft_steps(calls, 0) if s[0] == 3]
        self.assertEqual(
            layer3[:2],
            [
                (3, "all_reduce", (0, 1), 4, "dp_attention.py:attn_tp_all_reduce"),
                (3, "all_reduce", (0, 1), 4, "communicator.py:_gather_hidden_states_and_residual"),
            ],
        )
        frames = [c["frames"] for c in calls if c["rank"] == 0 and c.get("draft") and c["layer"] == 3][0]
        self.assertTrue(frames[1].startswith("sglang/srt/models/nemotron_h_mtp.py:"))
        # Under DP attention the eh_proj is split over attention TP and
        # gathered along the hidden dimension (attn_tp_group.all_gather).
        self.assertEqual(draft_steps(calls, 0)[1], (2, "all_gather", (0, 1), 4, "nemotron_h_mtp.py:forward"))


class DraftUnderPipelineStages(unittest.TestCase):
    def test_only_the_last_stage_runs_the_draft_on_a_pipeline_group_of_one(self):
        # eagle_worker_v2.py: the draft is built under draft_pp_context (a
        # pipeline group of one) and hosted by the last stage only.
        _, calls, outcomes, verdict = record("M-|*E/*E", tp=2, pp=2)
        self.assertEqual(verdict["verdict"], "ran")
        self.assertEqual({c["rank"] for c in calls if c.get("draft")}, {2, 3})
        self.assertEqual({c["layer"] for c in calls if c.get("draft")}, {None, 4, 5})
        self.assertEqual(["draft_output_shape" in o for o in outcomes], [False, False, True, True])


class DraftRefusalsAndDeepseek(unittest.TestCase):
    def test_the_engine_builds_no_mtp_mlp_layer(self):
        _, _, outcomes, verdict = record("M-/*-", tp=2)
        self.assertEqual(verdict["verdict"], "raised")
        self.assertIn("Pattern char '-'", outcomes[0]["error"])
        self.assertTrue(outcomes[0]["where"].startswith("sglang/srt/models/nemotron_h_mtp.py:"))

    def test_deepseeks_nextn_layer_follows_the_target_layers_and_sums_like_a_moe_layer(self):
        _, calls, _, verdict = record("*-*E/*E", architecture="DeepseekV3ForCausalLM", tp=2)
        self.assertEqual(verdict["verdict"], "ran")
        tp = (0, 1)
        self.assertEqual(
            draft_steps(calls, 1),
            [
                (None, "all_reduce", tp, 3, "vocab_parallel_embedding.py:forward"),  # DeepseekModelNextN.embed_tokens
                (2, "all_reduce", tp, 3, "communicator.py:_gather_hidden_states_and_residual"),
                (2, "all_reduce", tp, 3, "deepseek_v2.py:forward_normal"),  # DeepseekV2MoE
            ],
        )

    def test_an_mtp_key_that_contradicts_the_patterns_step_is_bad_input(self):
        doc = {"pattern": "M-/*E", "mtp": "E", "config": {"pp": 1, "tp": 1, "attn_dp": 1, "attn_cp": 1, "moe_ep": 1,
                                                           "moe_dp": 1, "tokens": [1], "mode": "decode"}}
        with self.assertRaises(CaseError):
            parse_case(json.dumps(doc))
        doc.update(pattern="M-")
        self.assertEqual(parse_case(json.dumps(doc)).mtp, "E")


if __name__ == "__main__":
    unittest.main()
