"""SGLang 0.5.20 with pipeline stages (--pp-size): each stage builds its own
layers (distributed/utils.py get_pp_indices, at the case's cuts through
SGLANG_PP_LAYER_PARTITION) and hands its hidden states on as the
scheduler's pipeline loop does (managers/scheduler_pp_mixin.py), through the
pipeline group's send_tensor_dict / recv_tensor_dict. Expected calls read
off the engine's execution, agreeing with its code at the cited places."""

import json
import unittest

from test_sglang_nemotron_h import steps

from seam_recorder.case import parse_case
from seam_recorder.recording import record_case


def record(pattern, **config):
    cfg = {"pp": 2, "tp": 2, "attn_dp": 1, "attn_cp": 1, "moe_ep": 1, "moe_dp": 1, "tokens": [3], "mode": "decode"}
    cfg.update(config)
    doc = {"pattern": pattern, "architecture": "Qwen3ForCausalLM", "family": "two-stage",
           "shape": {"heads": 32, "kv_heads": 8}, "config": cfg}
    lines = [json.loads(l) for l in record_case(parse_case(json.dumps(doc)), None, 120)]
    return lines[0], [l for l in lines[1:-1] if "op" in l], lines[-1]


def layer_steps(calls, rank):
    """steps() of a rank's calls in the model (the stage transfer, issued
    from the recorder's scheduler loop, has no engine frame of its own)."""
    return steps([c for c in calls if not c.get("pipeline")], rank)


def transfer(calls, rank):
    """(op, members, dtype, elements) of a rank's stage transfer."""
    return [(c["op"], tuple(c["ranks"]), c["dtype"], c["in_shape"][0]) for c in calls
            if c["rank"] == rank and c.get("pipeline")]


class TwoStagesOfTwoRanks(unittest.TestCase):
    """pp 2 x tp 2: stage 0 is ranks 0 and 1, stage 1 ranks 2 and 3; the cut
    after two layers gives stage 0 layers 0 and 1, stage 1 layer 2."""

    @classmethod
    def setUpClass(cls):
        cls.header, cls.calls, cls.verdict = record("*-*-|*-")

    def test_each_stage_runs_only_its_own_layers_numbered_as_in_the_whole_model(self):
        self.assertEqual(self.verdict["verdict"], "ran")
        self.assertIn("--pp-size", self.header["launch_flags"])
        self.assertEqual({s[0] for s in layer_steps(self.calls, 1) if s[0] is not None}, {0, 1})
        self.assertEqual({s[0] for s in layer_steps(self.calls, 3) if s[0] is not None}, {2})

    def test_the_first_stage_sends_metadata_then_its_attention_tp_slice_of_each_tensor(self):
        # send_tensor_dict: send_object (the metadata's size, then its pickled
        # bytes), then each tensor's slice for this attention-TP rank (3 x 64
        # rows over attention TP 2: 96 elements), hidden states and residual.
        sent = transfer(self.calls, 1)
        self.assertEqual([s[:3] for s in sent], [("send", (1, 3), "int64"), ("send", (1, 3), "uint8"),
                                                 ("send", (1, 3), "float32"), ("send", (1, 3), "float32")])
        self.assertEqual([s[3] for s in sent[2:]], [96, 96])

    def test_the_next_stage_receives_each_slice_and_all_gathers_it_over_attention_tp(self):
        # recv_tensor_dict with all_gather_group (scheduler_pp_mixin.py
        # _pp_recv_proxy_tensors passes the attention-TP group).
        got = transfer(self.calls, 3)
        self.assertEqual([(s[0], s[1]) for s in got],
                         [("recv", (1, 3)), ("recv", (1, 3)), ("recv", (1, 3)), ("all_gather", (2, 3)),
                          ("recv", (1, 3)), ("all_gather", (2, 3))])
        # The last stage embeds nothing: no call outside the layers but the transfer.
        self.assertEqual([s for s in layer_steps(self.calls, 3) if s[0] is None], [])


if __name__ == "__main__":
    unittest.main()
