"""A sweep records the cases of one server launch (the same flags, other
batches) as that server's forwards, its groups and model built once: what
each forward records must be what the case records alone, and a forward
that fails ends its world without touching the cases after it."""

import json
import unittest

from seam_recorder.case import parse_case
from seam_recorder.recording import record_case, record_cases, server_key

PATTERN = "M*-M-"
SERVER = {"pp": 1, "tp": 8, "attn_dp": 2, "attn_cp": 2, "moe_ep": 1, "moe_dp": 1}
# Under DP attention with attention CP, SGLang 0.5.20 runs the extends of
# (1,1) and (3,3) tokens and raises in the one of (5,5) (its runner passes
# NemotronHModel.forward an input_embeds it does not take), as its runs show.
BATCHES = [([1, 1], "extend"), ([5, 5], "extend"), ([3, 3], "extend")]


def case(tokens, mode):
    return parse_case(json.dumps({"pattern": PATTERN, "config": dict(SERVER, tokens=tokens, mode=mode)}))


def comparable(lines):
    """A recording without what depends on when and in which world it ran:
    the timing and the forwards before it (the outputs' digests stay: each
    forward starts from the same random state, and memory the engine leaves
    unwritten reads as NaN)."""
    out = []
    for line in lines:
        entry = json.loads(line)
        for key in ("seconds", "forwards_before"):
            entry.pop(key, None)
        out.append(entry)
    return out


class AServersForwardsRecordWhatEachCaseRecordsAlone(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cases = [case(t, m) for t, m in BATCHES]
        cls.together = record_cases(cls.cases, None, 120)
        cls.alone = [record_case(c, None, 120) for c in cls.cases]

    def test_the_cases_are_one_servers(self):
        self.assertEqual(len({server_key(c) for c in self.cases}), 1)

    def test_each_forward_records_the_calls_outcomes_and_verdict_of_the_case_alone(self):
        verdicts = [json.loads(r[-1])["verdict"] for r in self.alone]
        self.assertEqual(verdicts, ["ran", "raised", "ran"])
        for together, alone in zip(self.together, self.alone):
            self.assertEqual(comparable(together), comparable(alone))

    def test_a_failed_forward_ends_its_world_and_the_next_case_starts_a_fresh_one(self):
        before = [json.loads(r[0])["forwards_before"] for r in self.together]
        self.assertEqual(before, [0, 1, 0])

    def test_cases_of_two_servers_are_refused_together(self):
        other = parse_case(json.dumps({"pattern": PATTERN, "config": dict(SERVER, tp=4, tokens=[1, 1], mode="decode")}))
        with self.assertRaises(ValueError):
            record_cases([self.cases[0], other], None, 60)


if __name__ == "__main__":
    unittest.main()
